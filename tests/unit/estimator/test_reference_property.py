"""The vectorised estimate equals a plain per-node reading of spec 3.3-3.5 on random clusters."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from fleetsched.api.quantity import parse_quantity
from fleetsched.estimator.model import NodeClaim, Toleration
from fleetsched.estimator.nodefilter import Taint, node_matches

from .builders import a_node, a_pod, member, replicas

CPU = st.sampled_from(["0", "250m", "1", "3.5", "8", "64"])
MEM = st.sampled_from(["0", "512Mi", "1Gi", "7.5Gi", "1e10", "64Gi"])
GPU = st.sampled_from([None, "0", "1", "4"])
SLOTS = st.sampled_from(["0", "1", "3", "110"])


@st.composite
def clusters(draw: Any) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    nodes, pods = [], []
    for i in range(draw(st.integers(1, 6))):
        extra = {}
        gpu = draw(GPU)
        if gpu is not None:
            extra["nvidia.com/gpu"] = gpu
        labels = {"disk": draw(st.sampled_from(["ssd", "hdd"]))}
        taints = [("dedicated", "gpu", "NoSchedule")] if draw(st.booleans()) else []
        nodes.append(a_node(f"n{i}", draw(CPU), draw(MEM), draw(SLOTS), labels=labels, taints=taints,
                            unschedulable=draw(st.booleans()) and draw(st.booleans()), extra=extra))
        for j in range(draw(st.integers(0, 3))):
            requests = {"cpu": draw(CPU), "memory": draw(MEM)}
            if draw(st.booleans()):
                requests["nvidia.com/gpu"] = "1"
            phase = draw(st.sampled_from(["Running", "Pending", "Failed"]))
            pods.append(a_pod(f"p{i}-{j}", f"n{i}", phase=phase, **requests))
    return nodes, pods


def reference(nodes: list[dict[str, Any]], pods: list[dict[str, Any]], request: dict[str, str],
              claim: NodeClaim) -> int:
    def view(q: str, name: str) -> int:
        quantity = parse_quantity(q)
        return quantity.milli_value() if name == "cpu" else quantity.value()

    total = 0
    for node in nodes:
        name = node["metadata"]["name"]
        taints = [Taint(t["key"], t["value"], t["effect"]) for t in node["spec"].get("taints", [])]
        if not node_matches(name=name, labels=node["metadata"]["labels"], taints=taints,
                            unschedulable=node["spec"].get("unschedulable", False), claim=claim):
            continue
        alloc = {k: view(v, k) for k, v in node["status"]["allocatable"].items()}
        used: dict[str, int] = {}
        count = 0
        for pod in pods:
            if pod["spec"].get("nodeName") != name or pod["status"]["phase"] in ("Succeeded", "Failed"):
                continue
            count += 1
            for k, v in pod["spec"]["containers"][0]["resources"]["requests"].items():
                used[k] = used.get(k, 0) + view(v, k)
        fits = max(alloc["pods"] - count, 0)
        for k, v in request.items():
            amount = view(v, k)
            if amount <= 0:
                continue
            free = max(alloc.get(k, 0) - used.get(k, 0), 0) if k in alloc else 0
            fits = min(fits, free // amount)
        total += fits
    return min(total, 2147483647)


REQUESTS = st.fixed_dictionaries({"cpu": CPU}, optional={"memory": MEM, "nvidia.com/gpu": GPU.filter(bool)})


@settings(max_examples=120, deadline=None)
@given(cluster=clusters(), request=REQUESTS, disk=st.sampled_from([None, "ssd"]), tolerate=st.booleans())
def test_vectorised_equals_reference(cluster, request, disk, tolerate) -> None:  # type: ignore[no-untyped-def]
    nodes, pods = cluster
    claim_json: dict[str, Any] = {}
    selector: tuple[tuple[str, str], ...] = ()
    tolerations: tuple[Toleration, ...] = ()
    if disk:
        claim_json["nodeSelector"] = {"disk": disk}
        selector = (("disk", disk),)
    if tolerate:
        claim_json["tolerations"] = [{"operator": "Exists"}]
        tolerations = (Toleration(operator="Exists"),)
    got = replicas(member(*nodes, *pods), {"resourceRequest": request, "nodeClaim": claim_json})
    assert got == reference(nodes, pods, request, NodeClaim(node_selector=selector, tolerations=tolerations))
