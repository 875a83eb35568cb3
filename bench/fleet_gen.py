"""A seeded generator of realistic fleets of any size, for the benchmarks.

Clusters: providers with their regions and zones, environment/tier/team labels, taints on some,
API enablements that differ (a few clusters lack a CRD), resource summaries (allocatable,
allocated, allocating) and, on a share of them, resource models with allocatable modelings.

Workloads, in one of two shapes:

* ``bindings``: ResourceBindings with placements written out, as the shared bench fleets have;
* ``policies``: PropagationPolicies and the Deployments they select, so ``simulate`` runs policy
  matching and binding derivation as well (``--policies P --workloads W``).

Placements mix ordered affinity groups (cluster names, label and field selectors), overflow tiers,
tolerations, spread constraints by cluster and by region, and every replica-scheduling mode
(Duplicated, Aggregated, static weights, dynamic weights). ``--distinct-requests`` says how many
distinct per-replica requests there are (default: every binding its own, the cold path real
fleets take); ``heartbeat`` changes one cluster's status as a member's status update would, for
churn rounds (``bench/core.py --churn RATE``).

    .venv/bin/python bench/fleet_gen.py --clusters 1000 --bindings 100000 -o /tmp/fleet.yaml
    .venv/bin/python bench/fleet_gen.py --clusters 100 --policies 10000 --workloads 50000 -o /tmp/p.yaml

The same seed and arguments give the same bytes.
"""

from __future__ import annotations

import argparse
import copy
import random
import sys
import uuid
from collections.abc import Iterator
from typing import Any, TextIO

import yaml

try:
    _Dumper: type[yaml.SafeDumper] = yaml.CSafeDumper  # type: ignore[attr-defined]
except AttributeError:  # pragma: no cover - libyaml missing
    _Dumper = yaml.SafeDumper

PROVIDERS: dict[str, dict[str, list[str]]] = {
    "aws": {
        "us-east-1": ["us-east-1a", "us-east-1b", "us-east-1c"],
        "us-west-2": ["us-west-2a", "us-west-2b"],
        "eu-west-1": ["eu-west-1a", "eu-west-1b"],
        "ap-southeast-1": ["ap-southeast-1a"],
    },
    "gcp": {
        "us-central1": ["us-central1-a", "us-central1-b"],
        "europe-west4": ["europe-west4-a"],
        "asia-east1": ["asia-east1-a", "asia-east1-b"],
    },
    "azure": {"westeurope": ["westeurope-1", "westeurope-2"], "eastus": ["eastus-1"]},
    "alibaba": {"cn-hangzhou": ["cn-hangzhou-h", "cn-hangzhou-i"], "cn-beijing": ["cn-beijing-a"]},
    "huaweicloud": {"cn-north-4": ["cn-north-4a", "cn-north-4b"], "ap-southeast-3": ["ap-southeast-3a"]},
    "onprem": {"dc-frankfurt": ["fra-1"], "dc-virginia": ["iad-1", "iad-2"]},
}
ENVS = ("prod", "staging", "dev")
TIERS = ("gold", "silver", "bronze")
TEAMS = ("search", "payments", "ml", "web", "data")
NAMESPACES = ("shop", "payments", "ml-jobs", "search", "analytics", "web", "batch", "platform")

_BASE_APIS = [
    {"groupVersion": "apps/v1", "resources": [
        {"name": "deployments", "kind": "Deployment"},
        {"name": "statefulsets", "kind": "StatefulSet"},
    ]},
    {"groupVersion": "v1", "resources": [
        {"name": "configmaps", "kind": "ConfigMap"},
        {"name": "services", "kind": "Service"},
    ]},
]
_FLINK_API = {"groupVersion": "flink.apache.org/v1beta1",
              "resources": [{"name": "flinkdeployments", "kind": "FlinkDeployment"}]}

_MODELS = [
    {"grade": g, "ranges": [
        {"name": "cpu", "min": str(lo), "max": str(hi)},
        {"name": "memory", "min": f"{lo * 4}Gi", "max": f"{hi * 4}Gi"},
    ]}
    for g, (lo, hi) in enumerate([(0, 1), (1, 2), (2, 4), (4, 8), (8, 16)])
]
_CONDITIONS_READY = [
    {"type": "Ready", "status": "True", "reason": "ClusterReady",
     "message": "cluster is healthy and ready to accept workloads",
     "lastTransitionTime": "2026-01-01T00:00:00Z"},
]


def _uid(rng: random.Random) -> str:
    return str(uuid.UUID(int=rng.getrandbits(128), version=4))


def generate_clusters(rng: random.Random, count: int, *, models_share: float = 0.3) -> list[dict[str, Any]]:
    """``count`` Clusters spread over every provider and region."""
    regions = [(p, r, z) for p, rs in PROVIDERS.items() for r, z in rs.items()]
    clusters = []
    for i in range(count):
        provider, region, zones = regions[i % len(regions)]
        name = f"{provider}-{region}-{i}"
        spec: dict[str, Any] = {
            "syncMode": rng.choice(("Push", "Pull")),
            "provider": provider,
            "region": region,
            "zones": rng.sample(zones, k=rng.randint(1, len(zones))),
        }
        roll = rng.random()
        if roll < 0.08:
            taint = {"key": "dedicated", "value": rng.choice(("ml", "edge")), "effect": "NoSchedule"}
            spec["taints"] = [taint]
        elif roll < 0.11:
            spec["taints"] = [{"key": "cluster.karmada.io/not-ready", "effect": "NoSchedule"}]
        cpu = rng.choice((16, 32, 48, 64, 96, 128, 224))
        memory = cpu * rng.choice((2, 4, 8))
        allocated_cpu = rng.randint(0, cpu * 900)
        summary: dict[str, Any] = {
            "allocatable": {"cpu": str(cpu), "memory": f"{memory}Gi", "pods": str(cpu * 14)},
            "allocated": {
                "cpu": f"{allocated_cpu}m",
                "memory": f"{rng.randint(0, memory * 900)}Mi",
                "pods": str(rng.randint(0, cpu * 10)),
            },
            "allocating": {"cpu": f"{rng.randint(0, 50)}m", "memory": f"{rng.randint(0, 4)}Gi", "pods": "1"},
        }
        if rng.random() < 0.1:
            summary["allocatable"]["nvidia.com/gpu"] = str(rng.choice((8, 16, 32)))
        if rng.random() < models_share:
            spec["resourceModels"] = copy.deepcopy(_MODELS)
            summary["allocatableModelings"] = [
                {"grade": g, "count": rng.randint(0, 40)} for g in range(len(_MODELS))
            ]
        apis = copy.deepcopy(_BASE_APIS)
        if rng.random() < 0.7:
            apis.append(copy.deepcopy(_FLINK_API))
        clusters.append({
            "apiVersion": "cluster.karmada.io/v1alpha1",
            "kind": "Cluster",
            "metadata": {
                "name": name,
                "labels": {"env": rng.choice(ENVS), "tier": rng.choice(TIERS), "team": rng.choice(TEAMS)},
            },
            "spec": spec,
            "status": {
                "kubernetesVersion": "v1.30.2",
                "apiEnablements": apis,
                "conditions": copy.deepcopy(_CONDITIONS_READY),
                "resourceSummary": summary,
            },
        })
    return clusters


def heartbeat(rng: random.Random, cluster: dict[str, Any]) -> dict[str, Any]:
    """The cluster after one status update from its member: allocated and allocating move,
    nothing else (labels, taints, API enablements stay as they were)."""
    updated = copy.deepcopy(cluster)
    summary = updated["status"]["resourceSummary"]
    cpu = str(summary["allocatable"]["cpu"])
    cores = float(cpu[:-1]) / 1000 if cpu.endswith("m") else float(cpu)
    summary.setdefault("allocated", {})["cpu"] = f"{rng.randint(0, int(cores * 900))}m"
    summary.setdefault("allocating", {})
    summary["allocating"]["cpu"] = f"{rng.randint(0, 50)}m"
    if "allocatableModelings" in summary:
        for modeling in summary["allocatableModelings"]:
            modeling["count"] = max(0, modeling["count"] + rng.randint(-2, 2))
    return updated


def _request(rng: random.Random, index: int, distinct: int) -> dict[str, str]:
    """Per-replica request number ``index % distinct``: the same index, the same request."""
    k = index % distinct
    local = random.Random(k * 7919 + 17)
    request = {"cpu": f"{50 + k % 3950}m"}
    if local.random() < 0.8:
        request["memory"] = f"{64 + (k * 37) % 8000}Mi"
    del rng  # the request depends on its number only, so two runs share requests
    return request


def _placement(rng: random.Random, clusters: list[dict[str, Any]]) -> dict[str, Any]:
    names = [c["metadata"]["name"] for c in clusters]
    regions = sorted({c["spec"]["region"] for c in clusters})
    providers = sorted({c["spec"]["provider"] for c in clusters})
    placement: dict[str, Any] = {}
    mode = rng.random()
    # Overflow tiers are allowed with Aggregated or dynamic-weight division only (webhook rule).
    overflow_allowed = 0.15 <= mode < 0.35 or mode >= 0.5
    shape = rng.random()
    if shape < 0.35:
        groups = []
        for g in range(rng.randint(1, 3)):
            term: dict[str, Any] = {"affinityName": f"group-{g}"}
            pick = rng.random()
            if pick < 0.4:
                term["clusterNames"] = rng.sample(names, k=min(len(names), rng.randint(2, 8)))
            elif pick < 0.7:
                term["labelSelector"] = {"matchLabels": {"env": rng.choice(ENVS)}}
            elif pick < 0.9:
                term["fieldSelector"] = {"matchExpressions": [
                    {"key": "provider", "operator": "In", "values": rng.sample(providers, k=2)}]}
            # Overflow tiers need an inline affinity on their term (webhook rule).
            if overflow_allowed and len(term) > 1 and rng.random() < 0.25:
                term["overflowAffinities"] = [
                    {"affinityName": f"group-{g}-overflow-{o}",
                     "labelSelector": {"matchLabels": {"tier": rng.choice(TIERS)}}}
                    for o in range(rng.randint(1, 2))
                ]
            groups.append(term)
        placement["clusterAffinities"] = groups
    elif shape < 0.7:
        affinity: dict[str, Any] = {}
        if rng.random() < 0.5:
            affinity["labelSelector"] = {"matchExpressions": [
                {"key": "tier", "operator": "In", "values": rng.sample(TIERS, k=2)}]}
        else:
            affinity["fieldSelector"] = {"matchExpressions": [
                {"key": "region", "operator": "In", "values": rng.sample(regions, k=min(4, len(regions)))}]}
        if rng.random() < 0.2:
            affinity["exclude"] = rng.sample(names, k=1)
        placement["clusterAffinity"] = affinity
    if rng.random() < 0.3:
        placement["clusterTolerations"] = [
            {"key": "cluster.karmada.io/not-ready", "operator": "Exists", "effect": "NoSchedule"}]
    if rng.random() < 0.05:
        placement["clusterTolerations"] = [{"key": "dedicated", "operator": "Exists", "effect": "NoSchedule"}]
    if mode < 0.15:
        placement["replicaScheduling"] = {"replicaSchedulingType": "Duplicated"}
    elif mode < 0.35:
        placement["replicaScheduling"] = {"replicaSchedulingType": "Divided",
                                          "replicaDivisionPreference": "Aggregated"}
    elif mode < 0.5:
        chosen = rng.sample(names, k=min(len(names), rng.randint(2, 4)))
        placement["replicaScheduling"] = {
            "replicaSchedulingType": "Divided",
            "replicaDivisionPreference": "Weighted",
            "weightPreference": {"staticWeightList": [
                {"targetCluster": {"clusterNames": [n]}, "weight": rng.randint(1, 5)} for n in chosen]},
        }
    else:
        placement["replicaScheduling"] = {
            "replicaSchedulingType": "Divided",
            "replicaDivisionPreference": "Weighted",
            "weightPreference": {"dynamicWeight": "AvailableReplicas"},
        }
    spread = rng.random()
    if spread < 0.12:
        placement["spreadConstraints"] = [
            {"spreadByField": "cluster", "minGroups": 1, "maxGroups": rng.randint(2, 6)}]
    elif spread < 0.2:
        placement["spreadConstraints"] = [
            {"spreadByField": "region", "minGroups": 1, "maxGroups": rng.randint(1, 3)},
            {"spreadByField": "cluster", "minGroups": 1, "maxGroups": rng.randint(3, 8)},
        ]
    return placement


def generate_bindings(
    rng: random.Random,
    clusters: list[dict[str, Any]],
    count: int,
    *,
    distinct_requests: int | None = None,
    placements: int | None = None,
) -> Iterator[dict[str, Any]]:
    """``count`` ResourceBindings; ``distinct_requests`` per-replica requests in all (None: one
    each); ``placements`` distinct placements they share, as the workloads one policy matches
    share its placement (None: one per ten bindings)."""
    distinct = distinct_requests or count
    pool = [_placement(rng, clusters) for _ in range(placements or max(1, count // 10))]
    for i in range(count):
        namespace = NAMESPACES[i % len(NAMESPACES)]
        name = f"deployment-{i}"
        yield {
            "apiVersion": "work.karmada.io/v1alpha2",
            "kind": "ResourceBinding",
            "metadata": {"name": f"{name}-deployment", "namespace": namespace},
            "spec": {
                "resource": {"apiVersion": "apps/v1", "kind": "Deployment", "name": name,
                             "namespace": namespace, "uid": _uid(rng)},
                "replicas": rng.randint(1, 60),
                "replicaRequirements": {"resourceRequest": _request(rng, i, distinct)},
                "placement": copy.deepcopy(rng.choice(pool)),
            },
        }


def generate_policies_and_workloads(
    rng: random.Random,
    clusters: list[dict[str, Any]],
    *,
    policies: int,
    workloads: int,
    distinct_requests: int | None = None,
) -> Iterator[dict[str, Any]]:
    """``policies`` PropagationPolicies, then ``workloads`` Deployments. A policy selects its
    workloads by name (most) or by an ``app`` label shared by several; some workloads are
    matched by no policy, as in a real namespace."""
    distinct = distinct_requests or workloads
    apps = max(1, policies // 4)
    for p in range(policies):
        namespace = NAMESPACES[p % len(NAMESPACES)]
        selectors: list[dict[str, Any]]
        if p % 4 == 0:
            selectors = [{"apiVersion": "apps/v1", "kind": "Deployment",
                          "labelSelector": {"matchLabels": {"app": f"app-{p // 4}"}}}]
        else:
            selectors = [{"apiVersion": "apps/v1", "kind": "Deployment", "name": f"workload-{w}"}
                         for w in range(p, workloads, policies)][:3] or [
                {"apiVersion": "apps/v1", "kind": "Deployment", "name": f"workload-{p}"}]
        yield {
            "apiVersion": "policy.karmada.io/v1alpha1",
            "kind": "PropagationPolicy",
            "metadata": {"name": f"policy-{p}", "namespace": namespace},
            "spec": {"resourceSelectors": selectors, "priority": rng.randint(0, 3),
                     "placement": _placement(rng, clusters)},
        }
    for w in range(workloads):
        namespace = NAMESPACES[(w % policies) % len(NAMESPACES)]
        request = _request(rng, w, distinct)
        yield {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": f"workload-{w}", "namespace": namespace, "uid": _uid(rng),
                         "labels": {"app": f"app-{rng.randrange(apps)}"}},
            "spec": {
                "replicas": rng.randint(1, 30),
                "selector": {"matchLabels": {"workload": str(w)}},
                "template": {
                    "metadata": {"labels": {"workload": str(w)}},
                    "spec": {"containers": [{"name": "main", "image": "registry.example/app:1",
                                             "resources": {"requests": request}}]},
                },
            },
        }


def write_documents(documents: Iterator[dict[str, Any]], out: TextIO) -> int:
    """Writes YAML documents one by one (constant memory); returns how many."""
    count = 0
    for document in documents:
        if count:
            out.write("---\n")
        out.write(yaml.dump(document, Dumper=_Dumper, sort_keys=False, default_flow_style=False))
        count += 1
    return count


def fleet_documents(args: argparse.Namespace) -> Iterator[dict[str, Any]]:
    rng = random.Random(args.seed)
    clusters = generate_clusters(rng, args.clusters, models_share=args.models_share)
    yield from clusters
    if args.policies:
        yield from generate_policies_and_workloads(
            rng, clusters, policies=args.policies, workloads=args.workloads,
            distinct_requests=args.distinct_requests,
        )
    else:
        yield from generate_bindings(
            rng, clusters, args.bindings, distinct_requests=args.distinct_requests, placements=args.placements
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clusters", type=int, default=100)
    parser.add_argument("--bindings", type=int, default=5000, help="ResourceBindings (bindings shape)")
    parser.add_argument("--policies", type=int, default=0, help="PropagationPolicies (policies shape)")
    parser.add_argument("--workloads", type=int, default=0, help="Deployments (policies shape)")
    parser.add_argument("--distinct-requests", type=int, default=None,
                        help="distinct per-replica requests in all (default: every binding its own)")
    parser.add_argument("--placements", type=int, default=None,
                        help="distinct placements the bindings share (default: one per ten bindings)")
    parser.add_argument("--models-share", type=float, default=0.3,
                        help="share of Clusters with resource models (default %(default)s; 0 for none)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("-o", "--output", default="-", help="file to write ('-' = stdout)")
    args = parser.parse_args(argv)
    out = sys.stdout if args.output == "-" else open(args.output, "w", encoding="utf-8")  # noqa: SIM115
    try:
        count = write_documents(fleet_documents(args), out)
    finally:
        if out is not sys.stdout:
            out.close()
    print(f"fleet_gen: wrote {count} objects", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
