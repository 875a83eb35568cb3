"""Every invalid file is refused with one line: ``<file>: <field path>: <reason>``."""

from __future__ import annotations

from typing import Any

import pytest

from fleetsched.scheduler.config import ExtensionPoint

from .helpers import API, a_file, error_of, with_plugins

DEFAULT = "default-scheduler"
FIFO = {"FifoSort": frozenset({ExtensionPoint.QUEUE_SORT})}


def two_profiles(second: dict[str, Any]) -> dict[str, Any]:
    return a_file(profiles=[{"schedulerName": DEFAULT}, second])


CASES = [
    # ---- the document
    pytest.param(
        {"kind": "SchedulerConfiguration"},
        "c.yaml: apiVersion: required field (expected 'config.fleetsched.io/v1alpha1')",
        id="no apiVersion",
    ),
    pytest.param(
        {**API, "apiVersion": "kubescheduler.config.k8s.io/v1"},
        "c.yaml: apiVersion: unsupported value 'kubescheduler.config.k8s.io/v1' "
        "(supported: 'config.fleetsched.io/v1alpha1')",
        id="kube-scheduler's apiVersion",
    ),
    pytest.param(
        {**API, "kind": "KubeSchedulerConfiguration"},
        "c.yaml: kind: unsupported value 'KubeSchedulerConfiguration' (supported: 'SchedulerConfiguration')",
        id="wrong kind",
    ),
    pytest.param(
        ["a", "list"],
        "c.yaml: must be a mapping: a SchedulerConfiguration (config.fleetsched.io/v1alpha1)",
        id="not a mapping",
    ),
    # ---- structure
    pytest.param(a_file(profile=[]),
                 'c.yaml (line 3, column 1): strict decoding error: unknown field "profile"',
                 id="unknown top-level field"),
    pytest.param(
        with_plugins(filter={"enabld": []}),
        'c.yaml (line 7, column 7): strict decoding error: unknown field "profiles[0].plugins.filter.enabld"',
        id="unknown nested field",
    ),
    pytest.param(
        with_plugins(bind={"enabled": []}),
        'c.yaml (line 6, column 5): strict decoding error: unknown field "profiles[0].plugins.bind"',
        id="an extension point we do not have",
    ),
    pytest.param(
        a_file(parallelism="4"), "c.yaml: parallelism: must be an integer (got str)", id="string for int"
    ),
    pytest.param(
        a_file(parallelism=4.5), "c.yaml: parallelism: must be an integer (got float)", id="float for int"
    ),
    pytest.param(
        a_file(profiles={"schedulerName": DEFAULT}),
        "c.yaml: profiles: must be a list (got dict)",
        id="mapping for list",
    ),
    pytest.param(
        with_plugins(filter={"enabled": [{"weight": 1}]}),
        "c.yaml: profiles[0].plugins.filter.enabled[0].name: required field",
        id="plugin without name",
    ),
    pytest.param(
        a_file(leaderElection={"leaderElect": "yes"}),
        "c.yaml: leaderElection.leaderElect: must be true or false (got str)",
        id="string for bool",
    ),
    pytest.param(
        a_file(leaderElection={"leaseDuration": 15}),
        "c.yaml: leaderElection.leaseDuration: must be a duration string such as 5s or 500ms",
        id="duration without unit",
    ),
    pytest.param(
        a_file(leaderElection={"leaseDuration": "15 seconds"}),
        "c.yaml: leaderElection.leaseDuration: must be a duration such as 5s, 500ms or 1m30s",
        id="malformed duration",
    ),
    pytest.param(
        a_file(profiles=[{"pluginConfig": [{"name": "ClusterAffinity", "args": [1]}]}]),
        "c.yaml: profiles[0].pluginConfig[0].args: must be a mapping (got list)",
        id="args not a mapping",
    ),
    # ---- plugins
    pytest.param(
        two_profiles(
            {
                "schedulerName": "b",
                "plugins": {"score": {"enabled": [{"name": "ClusterLocality", "weight": 0}]}},
            }
        ),
        "c.yaml: profiles[1].plugins.score.enabled[0].weight: must be a positive integer",
        id="zero weight",
    ),
    pytest.param(
        with_plugins(score={"enabled": [{"name": "ClusterLocality", "weight": -3}]}),
        "c.yaml: profiles[0].plugins.score.enabled[0].weight: must be a positive integer",
        id="negative weight",
    ),
    pytest.param(
        with_plugins(filter={"enabled": [{"name": "TaintToleration", "weight": 2}]}),
        "c.yaml: profiles[0].plugins.filter.enabled[0].weight: "
        "only score and multiPoint plugins take a weight",
        id="weight on a filter",
    ),
    pytest.param(
        with_plugins(filter={"enabled": [{"name": "Nope"}]}),
        "c.yaml: profiles[0].plugins.filter.enabled[0].name: unknown plugin 'Nope' (known: APIEnablement, "
        "ClusterAffinity, ClusterEviction, ClusterLocality, ClusterResourcesBalancedAllocation, "
        "ClusterResourcesFit, PrioritySort, SpreadConstraint, TaintToleration)",
        id="unknown plugin",
    ),
    pytest.param(
        with_plugins(filter={"disabled": [{"name": "TaintTolerations"}]}),
        "c.yaml: profiles[0].plugins.filter.disabled[0].name: unknown plugin 'TaintTolerations' (known: "
        "APIEnablement, ClusterAffinity, ClusterEviction, ClusterLocality, "
        "ClusterResourcesBalancedAllocation, ClusterResourcesFit, PrioritySort, SpreadConstraint, "
        "TaintToleration)",
        id="unknown plugin disabled",
    ),
    pytest.param(
        with_plugins(filter={"disabled": [{"name": "TaintToleration", "weight": 1}]}),
        'c.yaml (line 9, column 9): strict decoding error: unknown field '
        '"profiles[0].plugins.filter.disabled[0].weight"',
        id="weight on a disabled",
    ),
    pytest.param(
        with_plugins(filter={"enabled": [{"name": "ClusterLocality"}]}),
        "c.yaml: profiles[0].plugins.filter.enabled[0].name: plugin 'ClusterLocality' does not implement "
        "filter",
        id="plugin at a point it does not implement",
    ),
    pytest.param(
        with_plugins(score={"enabled": [{"name": "ClusterLocality"}, {"name": "ClusterLocality"}]}),
        "c.yaml: profiles[0].plugins.score.enabled[1].name: duplicate plugin 'ClusterLocality' "
        "(also profiles[0].plugins.score.enabled[0])",
        id="duplicate in enabled",
    ),
    pytest.param(
        with_plugins(multiPoint={"enabled": [{"name": "ClusterAffinity"}, {"name": "ClusterAffinity"}]}),
        "c.yaml: profiles[0].plugins.multiPoint.enabled[1].name: duplicate plugin 'ClusterAffinity' "
        "(also profiles[0].plugins.multiPoint.enabled[0])",
        id="duplicate in multiPoint",
    ),
    pytest.param(
        with_plugins(queueSort={"disabled": [{"name": "*"}]}),
        "c.yaml: profiles[0].plugins.queueSort: exactly one queueSort plugin must be enabled, got 0",
        id="no queue sort",
    ),
    pytest.param(
        with_plugins(multiPoint={"disabled": [{"name": "*"}]}),
        "c.yaml: profiles[0].plugins.queueSort: exactly one queueSort plugin must be enabled, got 0",
        id="no queue sort after multiPoint *",
    ),
    # ---- profiles
    pytest.param(
        two_profiles({}),
        "c.yaml: profiles[1].schedulerName: required when there is more than one profile",
        id="second profile without a name",
    ),
    pytest.param(
        a_file(profiles=[{"schedulerName": " "}]),
        "c.yaml: profiles[0].schedulerName: must not be empty",
        id="blank name",
    ),
    pytest.param(
        two_profiles({"schedulerName": DEFAULT}),
        "c.yaml: profiles[1].schedulerName: duplicate schedulerName 'default-scheduler' (also profiles[0])",
        id="duplicate name",
    ),
    pytest.param(
        a_file(
            profiles=[
                {
                    "pluginConfig": [
                        {"name": "ClusterAffinity", "args": {}},
                        {"name": "ClusterAffinity", "args": {}},
                    ]
                }
            ]
        ),
        "c.yaml: profiles[0].pluginConfig[1].name: duplicate pluginConfig for plugin 'ClusterAffinity'",
        id="duplicate pluginConfig",
    ),
    pytest.param(
        a_file(
            profiles=[
                {
                    "plugins": {"score": {"disabled": [{"name": "ClusterLocality"}]}},
                    "pluginConfig": [{"name": "ClusterLocality", "args": {"a": 1}}],
                }
            ]
        ),
        "c.yaml: profiles[0].pluginConfig[0].name: plugin 'ClusterLocality' is not enabled in this profile",
        id="pluginConfig of a disabled plugin",
    ),
    pytest.param(
        a_file(profiles=[{"ignorablePlugins": ["Nope"]}]),
        "c.yaml: profiles[0].ignorablePlugins[0]: plugin 'Nope' is not enabled in this profile",
        id="ignorable plugin not enabled",
    ),
    pytest.param(
        a_file(profiles=[{"ignorablePlugins": ["TaintToleration", "TaintToleration"]}]),
        "c.yaml: profiles[0].ignorablePlugins[1]: duplicate plugin 'TaintToleration'",
        id="ignorable plugin twice",
    ),
    pytest.param(
        a_file(profiles=[{"pluginTimeout": "0s"}]),
        "c.yaml: profiles[0].pluginTimeout: must be a positive duration",
        id="zero plugin timeout",
    ),
    # ---- extenders
    pytest.param(
        a_file(extenders=[{"urlPrefix": "ftp://x/", "filterVerb": "filter"}]),
        "c.yaml: extenders[0].urlPrefix: must be an http:// or https:// URL with a host",
        id="ftp extender",
    ),
    pytest.param(
        a_file(extenders=[{"urlPrefix": "https:///path", "filterVerb": "filter"}]),
        "c.yaml: extenders[0].urlPrefix: must be an http:// or https:// URL with a host",
        id="no host",
    ),
    pytest.param(
        a_file(extenders=[{"urlPrefix": "https://e:99999/", "filterVerb": "filter"}]),
        "c.yaml: extenders[0].urlPrefix: has an invalid port",
        id="bad port",
    ),
    pytest.param(
        a_file(extenders=[{"urlPrefix": "https://e/x?y=1", "filterVerb": "filter"}]),
        "c.yaml: extenders[0].urlPrefix: must not have a query or fragment (the verb is appended to it)",
        id="query",
    ),
    pytest.param(
        a_file(extenders=[{"filterVerb": "filter"}]),
        "c.yaml: extenders[0].urlPrefix: required field",
        id="no urlPrefix",
    ),
    pytest.param(
        a_file(extenders=[{"urlPrefix": "https://e/"}]),
        "c.yaml: extenders[0]: must set filterVerb or prioritizeVerb",
        id="no verb",
    ),
    pytest.param(
        a_file(extenders=[{"urlPrefix": "https://e/", "prioritizeVerb": "prioritize", "weight": 0}]),
        "c.yaml: extenders[0].weight: must be a positive integer when prioritizeVerb is set",
        id="prioritize without weight",
    ),
    pytest.param(
        a_file(extenders=[{"urlPrefix": "https://e/", "filterVerb": "f", "httpTimeout": "0s"}]),
        "c.yaml: extenders[0].httpTimeout: must be a positive duration",
        id="zero timeout",
    ),
    pytest.param(
        a_file(
            extenders=[
                {"urlPrefix": "https://e/", "filterVerb": "f"},
                {"urlPrefix": "https://e/", "prioritizeVerb": "p"},
            ]
        ),
        "c.yaml: extenders[1].urlPrefix: duplicate urlPrefix 'https://e/' (also extenders[0])",
        id="duplicate extender",
    ),
    pytest.param(
        a_file(extenders=[{"urlPrefix": "http://e/", "filterVerb": "f", "tlsConfig": {"insecure": True}}]),
        "c.yaml: extenders[0].tlsConfig: needs an https:// urlPrefix",
        id="TLS over http",
    ),
    pytest.param(
        a_file(
            extenders=[{"urlPrefix": "https://e/", "filterVerb": "f", "tlsConfig": {"caData": "not base64!"}}]
        ),
        "c.yaml: extenders[0].tlsConfig.caData: must be PEM text or base64 of PEM",
        id="bad caData",
    ),
    pytest.param(
        a_file(
            extenders=[{"urlPrefix": "https://e/", "filterVerb": "f", "tlsConfig": {"certFile": "c.pem"}}]
        ),
        "c.yaml: extenders[0].tlsConfig.keyFile: a client certificate needs both certFile and keyFile",
        id="certificate without key",
    ),
    pytest.param(
        a_file(
            extenders=[
                {"urlPrefix": "https://e/", "filterVerb": "f", "tlsConfig": {"caFile": "a", "caData": "YQ=="}}
            ]
        ),
        "c.yaml: extenders[0].tlsConfig.caData: set caFile or caData, not both",
        id="two CAs",
    ),
    # ---- process settings
    pytest.param(a_file(parallelism=0), "c.yaml: parallelism: must be a positive integer", id="no workers"),
    pytest.param(
        a_file(leaderElection={"leaseDuration": "10s"}),
        "c.yaml: leaderElection.leaseDuration: leaseDuration must be greater than renewDeadline",
        id="lease not longer than renew deadline",
    ),
    pytest.param(
        a_file(leaderElection={"retryPeriod": "9s"}),
        "c.yaml: leaderElection.renewDeadline: renewDeadline must be greater than retryPeriod*JitterFactor",
        id="retry too slow",
    ),
    pytest.param(
        a_file(leaderElection={"resourceName": ""}),
        "c.yaml: leaderElection.resourceName: must not be empty",
        id="lease without a name",
    ),
    pytest.param(
        a_file(clientConnection={"qps": -1}),
        "c.yaml: clientConnection.qps: must not be negative (0 disables the limit)",
        id="negative qps",
    ),
    pytest.param(
        a_file(estimator={"port": 0}), "c.yaml: estimator.port: must be between 1 and 65535", id="port 0"
    ),
    pytest.param(
        a_file(estimator={"timeout": "0s"}),
        "c.yaml: estimator.timeout: must be a positive duration",
        id="estimator timeout",
    ),
    pytest.param(
        a_file(parallelism=0, estimator={"port": 0}),
        "c.yaml: parallelism: must be a positive integer (and 1 more problem)",
        id="several problems",
    ),
]


@pytest.mark.parametrize(("doc", "message"), CASES)
def test_an_invalid_file_gets_one_line_naming_the_field(doc: Any, message: str) -> None:
    assert error_of(doc) == message


def test_the_queue_sort_must_be_the_same_in_every_profile() -> None:
    doc = two_profiles(
        {
            "schedulerName": "b",
            "plugins": {"queueSort": {"disabled": [{"name": "*"}], "enabled": [{"name": "FifoSort"}]}},
        }
    )
    assert error_of(doc, catalog=FIFO) == (
        "c.yaml: profiles[1].plugins.queueSort: "
        "must be the same in every profile (profiles[0] uses 'PrioritySort')"
    )


def test_the_queue_sorts_args_must_be_the_same_in_every_profile() -> None:
    doc = two_profiles({"schedulerName": "b", "pluginConfig": [{"name": "PrioritySort", "args": {"x": 1}}]})
    assert error_of(doc) == (
        "c.yaml: profiles[1].pluginConfig: "
        "the args of the queue sort plugin 'PrioritySort' must be the same in every profile"
    )


def test_two_queue_sorts_in_one_profile() -> None:
    doc = with_plugins(queueSort={"enabled": [{"name": "FifoSort"}]})
    assert error_of(doc, catalog=FIFO) == (
        "c.yaml: profiles[0].plugins.queueSort: exactly one queueSort plugin must be enabled, got 2: "
        "PrioritySort, FifoSort"
    )


def test_a_plugin_with_unknown_points_cannot_go_in_multi_point() -> None:
    doc = with_plugins(multiPoint={"enabled": [{"name": "Opaque"}]})
    assert error_of(doc, catalog={"Opaque": None}) == (
        "c.yaml: profiles[0].plugins.multiPoint.enabled[0].name: plugin 'Opaque' does not say which "
        "extension points it implements; enable it at each point instead"
    )


@pytest.mark.parametrize(
    ("text", "message"),
    [
        pytest.param(
            "",
            "c.yaml: empty file: expected a SchedulerConfiguration (config.fleetsched.io/v1alpha1)",
            id="empty",
        ),
        pytest.param(
            "apiVersion: config.fleetsched.io/v1alpha1\nkind: SchedulerConfiguration\n---\na: 1\n",
            "c.yaml: holds 2 YAML documents: expected one SchedulerConfiguration",
            id="two documents",
        ),
        pytest.param(
            "apiVersion: [\n",
            "c.yaml: malformed YAML (line 2): did not find expected node content",
            id="YAML error",
        ),
        pytest.param(
            "a: 1\n b: 2\n",
            "c.yaml: malformed YAML (line 2): mapping values are not allowed in this context",
            id="bad indentation",
        ),
    ],
)
def test_text_that_is_no_configuration(text: str, message: str) -> None:
    assert error_of(text) == message


def test_a_file_that_cannot_be_read(tmp_path: Any) -> None:
    from fleetsched.scheduler.config import ConfigError, load_configuration

    with pytest.raises(ConfigError, match=r"absent.yaml: cannot read the configuration file: No such file"):
        load_configuration(tmp_path / "absent.yaml")
