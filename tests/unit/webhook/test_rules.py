"""Table tests: one or more rows per rule of webhook.md §5-§8, with Karmada's exact messages."""

from __future__ import annotations

from typing import Any

import pytest

from fleetsched.webhook import rules, schema

from .builders import CPP_LABEL, PP_LABEL, a_policy

NAME_PART = (
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
    "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)
OVERFLOW_SCHEDULING = (
    "overflowAffinities can only be used together with dynamic weight or aggregated scheduling"
)
AGGREGATED = {"replicaSchedulingType": "Divided", "replicaDivisionPreference": "Aggregated"}


def verdict(
    spec: dict[str, Any],
    *,
    kind: rules.PolicyKind = rules.PROPAGATION_POLICY,
    operation: str = "CREATE",
    old_spec: dict[str, Any] | None = None,
    request_namespace: str = "default",
    labels: dict[str, str] | None = None,
    old_labels: dict[str, str] | None = None,
) -> str | None:
    obj = schema.decode(a_policy(spec, kind=kind.kind, labels=labels), kind.type)
    old = None
    if old_spec is not None:
        old = schema.decode(a_policy(old_spec, kind=kind.kind, labels=old_labels), kind.type)
    return rules.validate_policy(
        kind, operation=operation, obj=obj, old=old, request_namespace=request_namespace
    )


SELECTOR = {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web", "namespace": "default"}


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        pytest.param({"resourceSelectors": [SELECTOR]}, None, id="plain policy is allowed"),
        pytest.param(
            {
                "placement": {
                    "clusterAffinity": {"clusterNames": ["member1"]},
                    "clusterAffinities": [{"affinityName": "primary", "clusterNames": ["member2"]}],
                }
            },
            'spec.placement: Invalid value: '
            '{"clusterAffinity":{"clusterNames":["member1"]},"clusterAffinities":'
            '[{"affinityName":"primary","clusterNames":["member2"]}]}: clusterAffinities cannot co-exist '
            'with '
            "clusterAffinity",
            id="S1 affinity and affinities",
        ),
        pytest.param(
            {"placement": {"clusterAffinity": {}, "clusterAffinities": []}},
            'spec.placement: Invalid value: {"clusterAffinity":{}}: clusterAffinities cannot co-exist with '
            "clusterAffinity",
            id="S1 empty list still counts as present",
        ),
        pytest.param(
            {"placement": {"clusterAffinity": {}, "clusterAffinities": None}},
            None,
            id="S1 null list is absent",
        ),
        pytest.param(
            {
                "placement": {
                    "clusterAffinities": [
                        {"affinityName": "a", "clusterNames": ["m1"], "overflowAffinities": []}
                    ]
                }
            },
            f"spec.placement.clusterAffinities[0].overflowAffinities: Invalid value: []: "
            f"{OVERFLOW_SCHEDULING}",
            id="S2 overflow without replicaScheduling",
        ),
        pytest.param(
            {
                "placement": {
                    "clusterAffinities": [
                        {
                            "affinityName": "a",
                            "clusterNames": ["m1"],
                            "overflowAffinities": [{"affinityName": "b"}],
                        }
                    ],
                    "replicaScheduling": {"replicaDivisionPreference": "Aggregated"},
                }
            },
            'spec.placement.clusterAffinities[0].overflowAffinities: Invalid value: [{"affinityName":"b"}]: '
            f"{OVERFLOW_SCHEDULING}",
            id="S2 type must literally be Divided",
        ),
        pytest.param(
            {
                "placement": {
                    "clusterAffinities": [
                        {
                            "affinityName": "a",
                            "clusterNames": ["m1"],
                            "overflowAffinities": [{"affinityName": "b"}],
                        }
                    ],
                    "replicaScheduling": {
                        "replicaSchedulingType": "Divided",
                        "replicaDivisionPreference": "Weighted",
                        "weightPreference": {"dynamicWeight": "AvailableReplicas"},
                    },
                }
            },
            None,
            id="S2 dynamic weight allows overflow",
        ),
        pytest.param(
            {
                "placement": {
                    "clusterAffinities": [
                        {
                            "affinityName": "a",
                            "clusterNames": ["m1"],
                            "overflowAffinities": [{"affinityName": "b"}],
                        }
                    ],
                    "replicaScheduling": AGGREGATED,
                }
            },
            None,
            id="S2 aggregated allows overflow",
        ),
        pytest.param(
            {
                "placement": {
                    "clusterAffinity": {
                        "fieldSelector": {
                            "matchExpressions": [{"key": "foo", "operator": "In", "values": ["x"]}]
                        }
                    }
                }
            },
            'spec.placement.clusterAffinity.fieldSelector: Invalid value: {"matchExpressions":[{"key":"foo",'
            '"operator":"In","values":["x"]}]}: unsupported key "foo", must be provider, region, or zone',
            id="S3 field selector key",
        ),
        pytest.param(
            {
                "placement": {
                    "clusterAffinity": {
                        "fieldSelector": {
                            "matchExpressions": [
                                {"key": "zone", "operator": "Exists"},
                                {"key": "bad", "operator": "In"},
                            ]
                        }
                    }
                }
            },
            'spec.placement.clusterAffinity.fieldSelector: Invalid value: {"matchExpressions":[{"key":"zone",'
            '"operator":"Exists"},{"key":"bad","operator":"In"}]}: unsupported operator "Exists", must be In '
            "or NotIn",
            id="S4 first offending expression only",
        ),
        pytest.param(
            {"placement": {"clusterAffinities": [{"affinityName": "a b"}]}},
            f'spec.placement.clusterAffinities[0]: Invalid value: "a b": {NAME_PART}',
            id="S5 affinity name",
        ),
        pytest.param(
            {
                "placement": {
                    "clusterAffinities": [{"affinityName": "a"}, {"affinityName": "a"}, {"affinityName": "a"}]
                }
            },
            'spec.placement.clusterAffinities: Invalid value: [{"affinityName":"a"},{"affinityName":"a"},'
            '{"affinityName":"a"}]: each affinity term in a policy must have a unique name',
            id="S6 duplicates collapse to one error",
        ),
        pytest.param(
            {
                "placement": {
                    "clusterAffinities": [
                        {
                            "affinityName": "a",
                            "fieldSelector": {"matchExpressions": [{"key": "region", "operator": "in"}]},
                        }
                    ]
                }
            },
            'spec.placement.clusterAffinities[0].fieldSelector: Invalid value: {"matchExpressions":[{"key":'
            '"region","operator":"in"}]}: unsupported operator "in", must be In or NotIn',
            id="S8 term operator",
        ),
        pytest.param(
            {
                "placement": {
                    "clusterAffinities": [
                        {
                            "affinityName": "a",
                            "clusterNames": [],
                            "overflowAffinities": [{"affinityName": "b"}],
                        }
                    ],
                    "replicaScheduling": AGGREGATED,
                }
            },
            'spec.placement.clusterAffinities[0].overflowAffinities: Invalid value: [{"affinityName":"b"}]: '
            "overflowAffinities can only be used together with the inline ClusterAffinity",
            id="S9 empty inline affinity",
        ),
        pytest.param(
            {
                "placement": {
                    "clusterAffinities": [
                        {
                            "affinityName": "a",
                            "fieldSelector": {},
                            "overflowAffinities": [{"affinityName": "b"}],
                        }
                    ],
                    "replicaScheduling": AGGREGATED,
                }
            },
            None,
            id="S9 an empty fieldSelector object is an inline affinity",
        ),
        pytest.param(
            {
                "placement": {
                    "clusterAffinities": [
                        {
                            "affinityName": "a",
                            "exclude": ["m"],
                            "overflowAffinities": [{"affinityName": "x/y/z"}],
                        }
                    ],
                    "replicaScheduling": AGGREGATED,
                }
            },
            'spec.placement.clusterAffinities[0].overflowAffinities[0].affinityName: Invalid value: "x/y/z": '
            "a valid label key must consist of alphanumeric characters, '-', '_' or '.', and must start and "
            "end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used "
            "for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain "
            "prefix and '/' (e.g. 'example.com/MyName')",
            id="S10 two slashes",
        ),
        pytest.param(
            {
                "placement": {
                    "clusterAffinities": [
                        {
                            "affinityName": "a",
                            "exclude": ["m"],
                            "overflowAffinities": [
                                {"affinityName": "b"},
                                {"affinityName": "a"},
                                {"affinityName": "b"},
                            ],
                        }
                    ],
                    "replicaScheduling": AGGREGATED,
                }
            },
            '[spec.placement.clusterAffinities[0].overflowAffinities[1].affinityName: Invalid value: "a": '
            "overflow affinity name must be unique and must not duplicate the primary group's affinityName, "
            'spec.placement.clusterAffinities[0].overflowAffinities[2].affinityName: Invalid value: "b": '
            "overflow affinity name must be unique and must not duplicate the primary group's affinityName]",
            id="S11 overflow names",
        ),
        pytest.param(
            {
                "placement": {
                    "clusterAffinities": [
                        {
                            "affinityName": "a",
                            "exclude": ["m"],
                            "overflowAffinities": [
                                {
                                    "affinityName": "b",
                                    "fieldSelector": {"matchExpressions": [{"key": "", "operator": "In"}]},
                                }
                            ],
                        }
                    ],
                    "replicaScheduling": AGGREGATED,
                }
            },
            "spec.placement.clusterAffinities[0].overflowAffinities[0].fieldSelector: Invalid value: "
            '{"matchExpressions":[{"key":"","operator":"In"}]}: unsupported key "", must be provider, '
            'region, '
            "or zone",
            id="S12 overflow field selector",
        ),
        pytest.param(
            {"placement": {"spreadConstraints": [{"spreadByField": "cluster", "spreadByLabel": "l"}]}},
            'spec.placement.spreadConstraints[0]: Invalid value: '
            '{"spreadByField":"cluster","spreadByLabel":"l"}: '
            "spreadByLabel should not co-exist with spreadByField",
            id="S13 field and label",
        ),
        pytest.param(
            {"placement": {"spreadConstraints": [{"spreadByLabel": "l", "minGroups": -1}]}},
            'spec.placement.spreadConstraints[0]: Invalid value: {"spreadByLabel":"l","minGroups":-1}: '
            "minGroups lower than 0 is not allowed",
            id="S14 negative minGroups",
        ),
        pytest.param(
            {"placement": {"spreadConstraints": [{"spreadByLabel": "l", "maxGroups": -3}]}},
            'spec.placement.spreadConstraints[0]: Invalid value: {"spreadByLabel":"l","maxGroups":-3}: '
            "maxGroups lower than 0 is not allowed",
            id="S15 negative maxGroups",
        ),
        pytest.param(
            {"placement": {"spreadConstraints": [{"spreadByLabel": "l", "maxGroups": 1, "minGroups": 2}]}},
            'spec.placement.spreadConstraints[0]: Invalid value: '
            '{"spreadByLabel":"l","maxGroups":1,"minGroups":2}'
            ": maxGroups lower than minGroups is not allowed",
            id="S16 max below min",
        ),
        pytest.param(
            {"placement": {"spreadConstraints": [{"spreadByLabel": "l", "maxGroups": 0, "minGroups": 2}]}},
            None,
            id="S16 zero maxGroups means unbounded",
        ),
        pytest.param(
            {
                "placement": {
                    "spreadConstraints": [
                        {"spreadByField": "cluster"},
                        {"spreadByField": "region"},
                        {"spreadByField": "region"},
                        {"spreadByField": "region"},
                    ]
                }
            },
            'spec.placement.spreadConstraints: Invalid value: [{"spreadByField":"cluster"},{"spreadByField":'
            '"region"},{"spreadByField":"region"},{"spreadByField":"region"}]: multiple region spread '
            "constraints are not allowed",
            id="S17 reported once per value",
        ),
        pytest.param(
            {"placement": {"spreadConstraints": [{"spreadByField": "zone"}, {"spreadByLabel": "x"}]}},
            'spec.placement.spreadConstraints: Invalid value: '
            '[{"spreadByField":"zone"},{"spreadByLabel":"x"}]: '
            "the cluster spread constraint must be enabled in one of the constraints in case of "
            "SpreadByField "
            "is enabled",
            id="S18 cluster constraint required",
        ),
        pytest.param(
            {"placement": {"spreadConstraints": [{"spreadByLabel": "x"}]}},
            None,
            id="S18 label-only constraints need no cluster constraint",
        ),
        pytest.param(
            {"placement": {"workloadAffinity": {"affinity": {"groupByLabelKey": ""}}}},
            '[spec.placement.workloadAffinity.affinity.groupByLabelKey: Invalid value: "": name part must be '
            'non-empty, spec.placement.workloadAffinity.affinity.groupByLabelKey: Invalid value: "": '
            f"{NAME_PART}]",
            id="S19 empty key gives two errors",
        ),
        pytest.param(
            {"placement": {"workloadAffinity": {"antiAffinity": {"groupByLabelKey": "/x"}}}},
            'spec.placement.workloadAffinity.antiAffinity.groupByLabelKey: Invalid value: "/x": prefix part '
            "must be non-empty",
            id="S20 anti-affinity key",
        ),
        pytest.param(
            {
                "placement": {
                    "workloadAffinity": {
                        "affinity": {"groupByLabelKey": "app"},
                        "antiAffinity": {"groupByLabelKey": "app"},
                    }
                }
            },
            'spec.placement.workloadAffinity: Invalid value: {"affinity":{"groupByLabelKey":"app"},'
            '"antiAffinity":{"groupByLabelKey":"app"}}: affinity and antiAffinity must not use the same '
            "groupByLabelKey",
            id="S21 same key",
        ),
        pytest.param(
            {
                "placement": {
                    "clusterTolerations": [
                        {"key": "k", "operator": "Lt", "value": "1", "effect": "NoSchedule"}
                    ]
                }
            },
            'spec.placement.clusterTolerations[0].operator: Unsupported value: "Lt": supported values: "", '
            '"Exists", "Equal"',
            id="S22 Lt toleration",
        ),
        pytest.param(
            {"placement": {"clusterTolerations": [{"operator": "whatever"}, {"operator": "Gt"}]}},
            'spec.placement.clusterTolerations[1].operator: Unsupported value: "Gt": supported values: "", '
            '"Exists", "Equal"',
            id="S22 only Lt and Gt are rejected",
        ),
        pytest.param(
            {
                "failover": {
                    "application": {"decisionConditions": {"tolerationSeconds": 1}, "purgeMode": "Directly"}
                }
            },
            "spec.propagateDeps: Invalid value: false: application failover is set, propagateDeps must be "
            "true",
            id="S23 propagateDeps",
        ),
        pytest.param(
            {
                "propagateDeps": True,
                "failover": {
                    "application": {"decisionConditions": {"tolerationSeconds": -1}, "purgeMode": "Never"}
                },
            },
            "spec.failover.application.decisionConditions.tolerationSeconds: Invalid value: -1: must be "
            "greater than or equal to 0",
            id="S24 negative toleration",
        ),
        pytest.param(
            {
                "propagateDeps": True,
                "failover": {"application": {"decisionConditions": {}, "purgeMode": "Never"}},
            },
            None,
            id="S24 absent toleration reads as the CRD default",
        ),
        pytest.param(
            {
                "propagateDeps": True,
                "failover": {"application": {"decisionConditions": {}, "gracePeriodSeconds": -5}},
            },
            "[spec.failover.application.gracePeriodSeconds: Invalid value: -5: only takes effect when "
            "purgeMode "
            "is gracefully, spec.failover.application.gracePeriodSeconds: Invalid value: -5: must be greater "
            "than 0]",
            id="S25 and S27 together",
        ),
        pytest.param(
            {
                "propagateDeps": True,
                "failover": {"application": {"decisionConditions": {}, "purgeMode": "Gracefully"}},
            },
            "spec.failover.application.gracePeriodSeconds: Invalid value: null: should not be empty when "
            "purgeMode is gracefully",
            id="S26 grace period required",
        ),
        pytest.param(
            {
                "propagateDeps": True,
                "failover": {
                    "application": {
                        "decisionConditions": {},
                        "purgeMode": "Gracefully",
                        "gracePeriodSeconds": 0,
                    }
                },
            },
            "spec.failover.application.gracePeriodSeconds: Invalid value: 0: must be greater than 0",
            id="S27 zero grace period",
        ),
        pytest.param(
            {
                "propagateDeps": True,
                "failover": {
                    "application": {
                        "decisionConditions": {},
                        "purgeMode": "Directly",
                        "statePreservation": {
                            "rules": [
                                {"aliasLabelName": "ok", "jsonPath": "{.a}"},
                                {"aliasLabelName": "Bad-", "jsonPath": "{.b}"},
                            ]
                        },
                    }
                },
            },
            'spec.failover.application.statePreservation.rules[1].aliasLabelName: Invalid value: "Bad-": '
            f"{NAME_PART}",
            id="S28 application alias label",
        ),
        pytest.param(
            {
                "failover": {
                    "cluster": {
                        "statePreservation": {"rules": [{"aliasLabelName": "UPPER.ok/x", "jsonPath": "{.a}"}]}
                    }
                }
            },
            'spec.failover.cluster.statePreservation.rules[0].aliasLabelName: Invalid value: "UPPER.ok/x": '
            "prefix part a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, "
            "'-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex "
            "used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
            id="S29 cluster alias label prefix",
        ),
        pytest.param(
            {
                "resourceSelectors": [
                    {"apiVersion": "v1", "kind": "ConfigMap", "namespace": "other"},
                    {"apiVersion": "v1", "kind": "ConfigMap"},
                ]
            },
            '[spec.resourceSelectors[0].namespace: Invalid value: "other": namespace of resource selector '
            'must '
            'be the same as the namespace of the policy, spec.resourceSelectors[1].namespace: Invalid '
            'value: "": '
            "namespace of resource selector must be the same as the namespace of the policy]",
            id="S30 selector namespace",
        ),
        pytest.param(
            {"preemption": "Always", "resourceSelectors": [SELECTOR, {**SELECTOR, "name": ""}]},
            'spec.resourceSelectors[1].name: Invalid value: "": name cannot be empty if preemption is '
            'Always, '
            "the empty name may cause unexpected resources preemption",
            id="S31 preemption needs names",
        ),
        pytest.param(
            {"suspension": {"dispatching": True, "dispatchingOnClusters": {"clusterNames": ["m<1>&"]}}},
            'spec.suspension.suspension: Invalid value: {"dispatching":true,"dispatchingOnClusters":'
            '{"clusterNames":["m\\u003c1\\u003e\\u0026"]}}: suspension dispatching cannot co-exist with '
            "dispatchingOnClusters.clusterNames",
            id="S32 suspension with HTML escaping",
        ),
        pytest.param(
            {"suspension": {"dispatching": False, "dispatchingOnClusters": {"clusterNames": ["m1"]}}},
            None,
            id="S32 dispatching false is fine",
        ),
    ],
)
def test_spec_rules(spec: dict[str, Any], expected: str | None) -> None:
    assert verdict(spec) == expected


def test_s30_only_for_namespaced_policies() -> None:
    spec = {"resourceSelectors": [{"apiVersion": "v1", "kind": "ConfigMap", "namespace": "other"}]}
    assert verdict(spec, kind=rules.CLUSTER_PROPAGATION_POLICY, labels={CPP_LABEL: "x"}) is None


def test_evaluation_order_follows_the_spec_example() -> None:
    spec = {
        "resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment", "namespace": "other"}],
        "preemption": "Always",
        "placement": {"spreadConstraints": [{"spreadByField": "region", "maxGroups": 1, "minGroups": 2}]},
    }
    assert verdict(spec) == (
        '[spec.placement.spreadConstraints[0]: Invalid value: '
        '{"spreadByField":"region","maxGroups":1,"minGroups":2}'
        ": maxGroups lower than minGroups is not allowed, spec.placement.spreadConstraints: Invalid value: "
        '[{"spreadByField":"region","maxGroups":1,"minGroups":2}]: the cluster spread constraint must be '
        'enabled '
        "in one of the constraints in case of SpreadByField is enabled, spec.resourceSelectors[0].namespace: "
        'Invalid value: "other": namespace of resource selector must be the same as the namespace of the '
        'policy, '
        'spec.resourceSelectors[0].name: Invalid value: "": name cannot be empty if preemption is Always, '
        'the '
        "empty name may cause unexpected resources preemption]"
    )


@pytest.mark.parametrize(
    ("kwargs", "expected"),
    [
        pytest.param(
            {"operation": "UPDATE", "old_spec": {"schedulerName": "a"}, "spec_": {"schedulerName": "b"}},
            "the schedulerName should not be updated",
            id="V1 scheduler name",
        ),
        pytest.param(
            {"operation": "UPDATE", "old_spec": {"schedulerName": ""}, "spec_": {}},
            None,
            id="V1 absent equals empty",
        ),
        pytest.param(
            {
                "operation": "UPDATE",
                "old_spec": {},
                "spec_": {},
                "labels": {PP_LABEL: "new"},
                "old_labels": {PP_LABEL: "old"},
            },
            f"label {PP_LABEL} is immutable, it can only be set by the system during creation",
            id="V2 permanent id changed",
        ),
        pytest.param(
            {"operation": "UPDATE", "old_spec": {}, "spec_": {}, "labels": {PP_LABEL: ""}, "old_labels": {}},
            None,
            id="V2 adding an empty id is not a change",
        ),
        pytest.param(
            {"labels": {}, "spec_": {"placement": {"clusterTolerations": [{"operator": "Lt"}]}}},
            f"label {PP_LABEL} is required, it should be set by the mutating admission webhook during "
            f"creation",
            id="V3 label required and stops evaluation",
        ),
        pytest.param({"labels": {PP_LABEL: ""}, "spec_": {}}, None, id="V3 empty value passes"),
        pytest.param(
            {
                "operation": "UPDATE",
                "old_spec": {"schedulerName": "a"},
                "spec_": {"schedulerName": "b"},
                "labels": {},
            },
            "the schedulerName should not be updated",
            id="V1 before V3",
        ),
    ],
)
def test_metadata_rules(kwargs: dict[str, Any], expected: str | None) -> None:
    spec = kwargs.pop("spec_")
    assert verdict(spec, **kwargs) == expected


def test_cpp_permanent_id_label_names() -> None:
    message = verdict({}, kind=rules.CLUSTER_PROPAGATION_POLICY, labels={PP_LABEL: "wrong-kind-of-label"})
    assert message == (
        f"label {CPP_LABEL} is required, it should be set by the mutating admission webhook during creation"
    )


# --- mutation ------------------------------------------------------------------------------


def mutated(
    spec: dict[str, Any],
    *,
    kind: rules.PolicyKind = rules.PROPAGATION_POLICY,
    operation: str = "CREATE",
    labels: dict[str, str] | None = None,
    finalizers: list[str] | None = None,
) -> dict[str, Any]:
    raw = a_policy(spec, kind=kind.kind, labels=labels)
    if finalizers is not None:
        raw["metadata"]["finalizers"] = finalizers
    obj = schema.decode(raw, kind.type)
    return rules.mutate_policy(
        kind, operation=operation, obj=obj, request_namespace="ns-r", permanent_id="new-id"
    )


def test_m1_selector_namespace_from_the_request() -> None:
    out = mutated({"resourceSelectors": [{"apiVersion": "v1", "kind": "A"}, {"namespace": "keep"}]})
    assert [s.get("namespace") for s in out["spec"]["resourceSelectors"]] == ["ns-r", "keep"]


def test_m1_not_for_cluster_policies() -> None:
    out = mutated(
        {"resourceSelectors": [{"apiVersion": "v1", "kind": "A"}]}, kind=rules.CLUSTER_PROPAGATION_POLICY
    )
    assert "namespace" not in out["spec"]["resourceSelectors"][0]


@pytest.mark.parametrize(
    ("constraint", "expected"),
    [
        pytest.param({}, {"spreadByField": "cluster", "minGroups": 1}, id="M2 and M3 on an empty constraint"),
        pytest.param(
            {"spreadByLabel": "l"}, {"spreadByLabel": "l", "minGroups": 1}, id="M2 not with a label"
        ),
        pytest.param(
            {"spreadByField": "zone", "minGroups": -2},
            {"spreadByField": "zone", "minGroups": -2},
            id="M3 only replaces zero",
        ),
    ],
)
def test_spread_defaults(constraint: dict[str, Any], expected: dict[str, Any]) -> None:
    assert mutated({"placement": {"spreadConstraints": [constraint]}})["spec"]["placement"][
        "spreadConstraints"
    ] == [expected]


@pytest.mark.parametrize(
    ("selector", "propagate"),
    [
        pytest.param(
            {"apiVersion": "multicluster.x-k8s.io/v1alpha1", "kind": "ServiceImport"}, True, id="M4 applies"
        ),
        pytest.param({"apiVersion": "v1", "kind": "ServiceImport"}, None, id="M4 needs the exact apiVersion"),
    ],
)
def test_m4_service_import(selector: dict[str, Any], propagate: bool | None) -> None:
    assert mutated({"resourceSelectors": [selector]})["spec"].get("propagateDeps") is propagate


@pytest.mark.parametrize(
    ("strategy", "preference"),
    [
        pytest.param({"replicaSchedulingType": "Divided"}, "Weighted", id="M5 divided gets weighted"),
        pytest.param({}, None, id="M5 absent type does not count"),
        pytest.param(
            {"replicaSchedulingType": "Divided", "replicaDivisionPreference": "Aggregated"},
            "Aggregated",
            id="M5 keeps an explicit preference",
        ),
    ],
)
def test_m5_division_preference(strategy: dict[str, Any], preference: str | None) -> None:
    out = mutated({"placement": {"replicaScheduling": strategy}})
    assert out["spec"]["placement"]["replicaScheduling"].get("replicaDivisionPreference") == preference


def test_m5_never_creates_replica_scheduling() -> None:
    assert "replicaScheduling" not in mutated({"placement": {}})["spec"]["placement"]


@pytest.mark.parametrize(
    ("application", "grace"),
    [
        pytest.param({"purgeMode": "Gracefully"}, 600, id="M6 default grace period"),
        pytest.param({"purgeMode": "Gracefully", "gracePeriodSeconds": 5}, 5, id="M6 keeps a set value"),
        pytest.param({}, None, id="M6 absent purge mode does not count"),
    ],
)
def test_m6_grace_period(application: dict[str, Any], grace: int | None) -> None:
    out = mutated({"failover": {"application": application}})
    assert out["spec"]["failover"]["application"].get("gracePeriodSeconds") == grace


def test_m7_m8_on_create_overwrite_the_id_and_add_the_finalizer_once() -> None:
    out = mutated({}, labels={PP_LABEL: "client-chose", "app": "x"}, finalizers=["other"])
    assert out["metadata"]["labels"] == {PP_LABEL: "new-id", "app": "x"}
    assert out["metadata"]["finalizers"] == ["other", "karmada.io/propagation-policy-controller"]
    again = mutated({}, finalizers=["karmada.io/propagation-policy-controller"])
    assert again["metadata"]["finalizers"] == ["karmada.io/propagation-policy-controller"]


def test_m7_m8_not_on_update() -> None:
    out = mutated({}, operation="UPDATE", labels={PP_LABEL: "kept"})
    assert out["metadata"]["labels"] == {PP_LABEL: "kept"}
    assert "finalizers" not in out["metadata"]


def test_cpp_uses_its_own_label_and_finalizer() -> None:
    out = mutated({}, kind=rules.CLUSTER_PROPAGATION_POLICY, labels={})
    assert out["metadata"]["labels"] == {CPP_LABEL: "new-id"}
    assert out["metadata"]["finalizers"] == ["karmada.io/cluster-propagation-policy-controller"]


def test_mutation_does_not_change_its_input() -> None:
    obj = schema.decode(a_policy({"placement": {"spreadConstraints": [{}]}}), schema.PROPAGATION_POLICY)
    before = repr(obj)
    rules.mutate_policy(
        rules.PROPAGATION_POLICY, operation="CREATE", obj=obj, request_namespace="n", permanent_id="x"
    )
    assert repr(obj) == before


# --- bindings ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("annotation", "expected"),
    [
        pytest.param(
            '[{"apiVersion":"v1","kind":"ConfigMap","namespace":"a","name":"b"}]', None, id="R1 valid"
        ),
        pytest.param("null", None, id="R1 null accepted"),
        pytest.param(
            '{"a":1}',
            "metadata.annotations.resourcebinding.karmada.io/dependencies: Invalid value: "
            '"{\\"a\\":1}": annotation value must be a valid JSON',
            id="R1 object is not a list",
        ),
        pytest.param(
            '[{"name": 3}]',
            "metadata.annotations.resourcebinding.karmada.io/dependencies: Invalid value: "
            '"[{\\"name\\": 3}]": annotation value must be a valid JSON',
            id="R1 wrong field type",
        ),
        pytest.param(
            "not json",
            "metadata.annotations.resourcebinding.karmada.io/dependencies: Invalid value: "
            '"not json": annotation value must be a valid JSON',
            id="R1 not JSON",
        ),
    ],
)
def test_r1_dependencies_annotation(annotation: str, expected: str | None) -> None:
    obj = {"metadata": {"annotations": {"resourcebinding.karmada.io/dependencies": annotation}}}
    assert rules.validate_binding(obj) == expected


def test_r3_r4_component_names_behind_the_gate() -> None:
    obj = {"spec": {"components": [{"name": ""}, {"name": "a"}, {"name": "a"}]}}
    assert rules.validate_binding(obj) is None
    assert rules.validate_binding(obj, multiple_pod_templates=True) == (
        '[spec.components[0].name: Invalid value: "": component names must be non-empty, '
        'spec.components[2].name: Invalid value: "a": component names must be unique]'
    )


@pytest.mark.parametrize(
    ("labels", "expected"),
    [
        pytest.param(None, "fresh", id="M9 absent label"),
        pytest.param({"resourcebinding.karmada.io/permanent-id": ""}, "fresh", id="M9 empty label"),
        pytest.param({"resourcebinding.karmada.io/permanent-id": "kept"}, "kept", id="M9 keeps a set label"),
    ],
)
def test_m9_binding_permanent_id(labels: dict[str, str] | None, expected: str) -> None:
    obj: dict[str, Any] = {"metadata": {"labels": labels} if labels is not None else {}}
    out = rules.mutate_binding(
        label="resourcebinding.karmada.io/permanent-id", operation="CREATE", obj=obj, permanent_id="fresh"
    )
    assert out["metadata"]["labels"]["resourcebinding.karmada.io/permanent-id"] == expected
