"""Which watch events the policy controller turns into work (api.md §7.1, §7.9, §7.11). No server:
the event handlers only touch caches and the queue."""

from __future__ import annotations

import copy
from typing import Any

from fleetsched.controller.policy.operator import (
    KNOWN_RESOURCES,
    PolicyController,
    PolicyControllerConfig,
)
from fleetsched.controller.runtime.queue import Outcome, QueueKey

DEPLOYMENTS = KNOWN_RESOURCES["deployments.apps"]


def a_controller() -> PolicyController:
    config = PolicyControllerConfig(resources=(DEPLOYMENTS,))
    return PolicyController(client=None, connection=None, config=config)  # type: ignore[arg-type]


def deployment(rv: str, **spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": "web", "namespace": "shop", "resourceVersion": rv}, "spec": spec}


def policy(rv: str, generation: int, **meta: Any) -> dict[str, Any]:
    return {
        "metadata": {
            "name": "p",
            "namespace": "shop",
            "resourceVersion": rv,
            "generation": generation,
            **meta,
        },
        "spec": {"resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment"}]},
    }


QKEY = QueueKey("deployments.apps", "shop", "web")


def test_template_events() -> None:
    controller = a_controller()
    controller.on_template_event(DEPLOYMENTS, "ADDED", deployment("1", replicas=1))
    assert QKEY in controller.queue and QKEY in controller._changed_by_user
    entry = controller.queue.pop_nowait()
    assert entry is not None and entry.key == QKEY
    controller.queue.done(entry, Outcome.DONE)
    # Only status/resourceVersion changed: nothing to do.
    status_only = deployment("2", replicas=1)
    status_only["status"] = {"readyReplicas": 1}
    controller.on_template_event(DEPLOYMENTS, "MODIFIED", status_only)
    assert QKEY not in controller.queue
    # Karmada's own claim labels: queued, flagged as a Karmada change.
    claimed = copy.deepcopy(status_only)
    claimed["metadata"]["resourceVersion"] = "3"
    claimed["metadata"]["labels"] = {"propagationpolicy.karmada.io/permanent-id": "x"}
    controller._changed_by_user.clear()
    controller.on_template_event(DEPLOYMENTS, "MODIFIED", claimed)
    assert QKEY in controller.queue and QKEY in controller._changed_by_karmada
    assert QKEY not in controller._changed_by_user
    # Deleted: forgotten.
    controller.on_template_event(DEPLOYMENTS, "DELETED", claimed)
    assert QKEY not in controller.queue and QKEY not in controller._changed_by_karmada
    assert controller.templates[DEPLOYMENTS.name].get("shop/web") is None


def test_stale_template_event_is_ignored() -> None:
    controller = a_controller()
    controller.on_template_event(DEPLOYMENTS, "ADDED", deployment("5", replicas=1))
    controller.on_template_event(DEPLOYMENTS, "MODIFIED", deployment("4", replicas=9))
    cached = controller.templates[DEPLOYMENTS.name].get("shop/web")
    assert cached is not None and cached["spec"]["replicas"] == 1


def test_policy_events_queue_on_add_generation_and_deletion_only() -> None:
    controller = a_controller()
    pkey = QueueKey("PropagationPolicy", "shop", "p")
    controller.on_policy_event("PropagationPolicy", "ADDED", policy("1", 1))
    assert pkey in controller.queue
    controller.queue.forget(pkey)
    controller.on_policy_event("PropagationPolicy", "MODIFIED", policy("2", 1, labels={"a": "b"}))
    assert pkey not in controller.queue, "metadata-only changes do not count (§7.1)"
    controller.on_policy_event("PropagationPolicy", "MODIFIED", policy("3", 2))
    assert pkey in controller.queue
    controller.queue.forget(pkey)
    controller.on_policy_event(
        "PropagationPolicy", "MODIFIED", policy("4", 2, deletionTimestamp="2026-01-01T00:00:00Z")
    )
    assert pkey in controller.queue, "deletion starts the claim cleanup"
