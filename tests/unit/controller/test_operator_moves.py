"""The operator's write path with a move budget, against the in-memory API of the write tests: a
reschedule taking away running replicas is written step by step as the members report the added
replicas ready, keeps the running ones on clusters still selected, and ends at the target; without
a budget the same change is one write."""

from __future__ import annotations

import copy
import json
from typing import Any

from fleetsched.controller.runtime.queue import Outcome, QueuedBinding
from fleetsched.controller.scheduler import moves
from fleetsched.controller.scheduler.operator import OperatorConfig, SchedulerOperator
from fleetsched.controller.scheduler.store import RB
from fleetsched.kube.client import Connection
from fleetsched.scheduler import Scheduler
from tests.unit.controller.test_operator_writes import WEB, MemoryApi, a_cluster


class Api(MemoryApi):
    """MemoryApi whose merge patch also removes an annotation set to null."""

    async def merge_patch(self, path: str, patch: dict[str, Any]) -> dict[str, Any]:
        out = await super().merge_patch(path, patch)
        annotations = self.binding["metadata"].get("annotations") or {}
        for key in [k for k, v in annotations.items() if v is None]:
            del annotations[key]
        out["metadata"]["annotations"] = dict(annotations)
        return out


def moved_binding(annotations: dict[str, str]) -> dict[str, Any]:
    """100 replicas running 40/60 on m1/m2; the placement now says m2 and m3, equal weights."""
    weights = [{"targetCluster": {"clusterNames": [c]}, "weight": 1} for c in ("m2", "m3")]
    return {
        "apiVersion": "work.karmada.io/v1alpha2",
        "kind": "ResourceBinding",
        "metadata": {"name": "web", "namespace": "ns", "generation": 1, "annotations": dict(annotations),
                     "labels": {"propagationpolicy.karmada.io/permanent-id": "p"}},
        "spec": {
            "resource": {"apiVersion": "apps/v1", "kind": "Deployment", "namespace": "ns", "name": "web"},
            "replicas": 100,
            "clusters": [{"name": "m1", "replicas": 40}, {"name": "m2", "replicas": 60}],
            "placement": {
                "clusterAffinity": {"clusterNames": ["m2", "m3"]},
                "replicaScheduling": {
                    "replicaSchedulingType": "Divided", "replicaDivisionPreference": "Weighted",
                    "weightPreference": {"staticWeightList": weights},
                },
            },
        },
        "status": {"aggregatedStatus": ready_status({"m1": 40, "m2": 60})},
    }


def ready_status(ready: dict[str, int]) -> list[dict[str, Any]]:
    return [{"clusterName": c, "status": {"readyReplicas": n}} for c, n in ready.items()]


def placed(api: MemoryApi) -> dict[str, int]:
    return moves.placement_of(api.binding["spec"]["clusters"])


def operator_for(api: MemoryApi) -> SchedulerOperator:
    operator = SchedulerOperator(
        client=api,
        connection=Connection(server="https://unused"),  # type: ignore[arg-type]
        scheduler=Scheduler(),
        config=OperatorConfig(),
    )
    for name in ("m1", "m2", "m3"):
        operator.on_cluster_event(None, a_cluster(name))
    operator.on_binding_event(RB, None, copy.deepcopy(api.binding))
    return operator


async def test_a_move_is_written_in_steps_as_replicas_become_ready() -> None:
    api = Api(moved_binding({moves.MAX_UNAVAILABLE_ANNOTATION: "10"}))
    operator = operator_for(api)
    seen = [placed(api)]
    try:
        for _ in range(12):
            assert await operator.process(QueuedBinding(WEB, 0, 0.0, 1)) is Outcome.DONE
            step = placed(api)
            if step != seen[-1]:
                seen.append(step)
            # the members: what was removed is gone, what was added comes up
            api.binding["status"]["aggregatedStatus"] = ready_status(step)
            api.bump()
            operator.on_binding_event(RB, "MODIFIED", copy.deepcopy(api.binding))
            if moves.TARGET_ANNOTATION not in api.binding["metadata"]["annotations"] and len(seen) > 1:
                break
        assert len(operator.polls.timers) == 0  # no more looks once the target is reached
    finally:
        operator.polls.close()
    # equal static weights would give 50/50; m2's 60 running replicas stay (kept available)
    assert seen == [
        {"m1": 40, "m2": 60},
        {"m1": 30, "m2": 60, "m3": 10},
        {"m1": 20, "m2": 60, "m3": 20},
        {"m1": 10, "m2": 60, "m3": 30},
        {"m2": 60, "m3": 40},
    ]
    assert api.binding["status"]["schedulerObservedGeneration"] == api.binding["metadata"]["generation"]


async def test_no_step_while_the_added_replicas_are_not_ready() -> None:
    api = Api(moved_binding({moves.MAX_UNAVAILABLE_ANNOTATION: "10"}))
    operator = operator_for(api)
    try:
        await operator.process(QueuedBinding(WEB, 0, 0.0, 1))
        first, writes = placed(api), list(api.writes)
        assert first == {"m1": 30, "m2": 60, "m3": 10}
        target = json.loads(api.binding["metadata"]["annotations"][moves.TARGET_ANNOTATION])
        assert target["clusters"] == [{"name": "m2", "replicas": 60}, {"name": "m3", "replicas": 40}]
        assert WEB in operator.polls.timers  # looked at again while the move is pending
        for _ in range(3):
            assert await operator.process(QueuedBinding(WEB, 0, 0.0, 1)) is Outcome.DONE
        assert placed(api) == first and api.writes == writes
        # a new operator (a restart) reads the target from the binding and goes on once ready
        api.binding["status"]["aggregatedStatus"] = ready_status(first)
        again = operator_for(api)
        try:
            await again.process(QueuedBinding(WEB, 0, 0.0, 1))
            assert placed(api) == {"m1": 20, "m2": 60, "m3": 20}
        finally:
            again.polls.close()
    finally:
        operator.polls.close()


async def test_without_a_budget_the_move_is_one_write_of_karmadas_result() -> None:
    api = Api(moved_binding({}))
    operator = operator_for(api)
    await operator.process(QueuedBinding(WEB, 0, 0.0, 1))
    assert placed(api) == {"m2": 50, "m3": 50}
    assert api.writes == ["spec", "status"]
    assert moves.TARGET_ANNOTATION not in api.binding["metadata"]["annotations"] and not operator.polls.timers
