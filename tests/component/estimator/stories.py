"""The two user stories of the estimator proposal (shared/spec/estimator.md section 6, examples 1-2),
as member-cluster Nodes, Karmada Clusters with matching resource summaries, and one binding.

Story 1: cluster A has 10 nodes with 8 free CPUs, B has 2 nodes with 16. One replica needs 12 CPUs:
only B can run it, although A has more CPUs in total. Story 2: A has 10 nodes with 16 CPUs and no
labels, B has 2 such nodes labelled ``key=value``; the replica selects ``key: value``.
"""

from __future__ import annotations

from typing import Any

CLUSTERS = ("member-a", "member-b")


def story_nodes(story: int, cluster: str) -> list[dict[str, Any]]:
    count, cpu = {(1, "member-a"): (10, "8"), (1, "member-b"): (2, "16"),
                  (2, "member-a"): (10, "16"), (2, "member-b"): (2, "16")}[(story, cluster)]
    labels = {"key": "value"} if (story, cluster) == (2, "member-b") else {}
    return [{"apiVersion": "v1", "kind": "Node",
             "metadata": {"name": f"{cluster}-node-{i}", "labels": dict(labels)},
             "status": {"allocatable": {"cpu": cpu, "memory": "64Gi", "pods": "110"},
                        "capacity": {"cpu": cpu, "memory": "64Gi", "pods": "110"}}}
            for i in range(count)]


def story_clusters(story: int) -> list[dict[str, Any]]:
    out = []
    for cluster in CLUSTERS:
        nodes = story_nodes(story, cluster)
        cpu = sum(int(n["status"]["allocatable"]["cpu"]) for n in nodes)
        out.append({
            "apiVersion": "cluster.karmada.io/v1alpha1", "kind": "Cluster", "metadata": {"name": cluster},
            "spec": {},
            "status": {
                "apiEnablements": [{"groupVersion": "apps/v1",
                                    "resources": [{"name": "deployments", "kind": "Deployment"}]}],
                "conditions": [{"type": "Ready", "status": "True", "reason": "ClusterReady",
                                "lastTransitionTime": "2024-01-01T00:00:00Z"}],
                "resourceSummary": {"allocatable": {"cpu": str(cpu), "memory": f"{64 * len(nodes)}Gi",
                                                    "pods": str(110 * len(nodes))}},
            },
        })
    return out


def story_binding(story: int) -> dict[str, Any]:
    requirements: dict[str, Any] = {"resourceRequest": {"cpu": "12"}}
    if story == 2:
        requirements["nodeClaim"] = {"nodeSelector": {"key": "value"}}
    return {
        "apiVersion": "work.karmada.io/v1alpha2", "kind": "ResourceBinding",
        "metadata": {"name": f"story{story}", "namespace": "default"},
        "spec": {
            "resource": {"apiVersion": "apps/v1", "kind": "Deployment", "namespace": "default",
                         "name": f"story{story}"},
            "placement": {"replicaScheduling": {"replicaSchedulingType": "Divided",
                                                "replicaDivisionPreference": "Aggregated"}},
            "replicas": 1,
            "replicaRequirements": requirements,
        },
    }


def placed(binding: dict[str, Any]) -> dict[str, int]:
    return {t["name"]: t.get("replicas", 0) for t in binding.get("spec", {}).get("clusters") or ()}
