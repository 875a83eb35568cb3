"""The framework's signal for a binding held at Permit (kube-scheduler's waitingPod channel): a
callback, called by the decision itself (the last allow or the first reject) in the deciding thread,
so a waiter needs no polling; the timeout calls nothing, it is the waiter's deadline."""

from __future__ import annotations

import threading

from fleetsched.plugin import Status, TargetCluster
from fleetsched.scheduler.framework.profile import ExtensionPoint
from fleetsched.scheduler.framework.runtime import BindingCycle, Framework

from .test_runtime import Gate, _context, profile_with, registry_of

TARGETS = [TargetCluster("m1", 1)]

def held_cycle(*gates: Gate, now: list[float] | None = None) -> tuple[Framework, BindingCycle]:
    clock = now if now is not None else [0.0]
    framework = Framework(
        registry_of(*gates),
        profile_with({ExtensionPoint.PERMIT: [g.name for g in gates]}),
        clock=lambda: clock[0],
    )
    cycle = framework.binding_cycle(_context(framework), TARGETS)
    assert cycle.reserve().is_success
    assert cycle.permit().code.value == "Wait"
    return framework, cycle


def test_the_last_allow_calls_the_waiter_once_in_the_allowing_thread() -> None:
    framework, cycle = held_cycle(Gate("Approval", Status.wait(30.0)), Gate("Quota", Status.wait(60.0)))
    woken: list[int] = []
    cycle.on_permit_decided(lambda: woken.append(threading.get_ident()))
    held = framework.waiting_binding(cycle.ctx.binding.key)
    assert held is not None
    held.allow("Approval")
    assert woken == []  # Quota still waits
    allower = threading.Thread(target=held.allow, args=("Quota",))
    allower.start()
    allower.join()
    assert woken == [allower.ident]
    held.allow("Quota")  # again: nobody is called twice
    assert woken == [allower.ident]
    status = cycle.wait_on_permit()
    assert status is not None and status.is_success


def test_a_reject_calls_the_waiter_and_the_answer_is_the_rejection() -> None:
    framework, cycle = held_cycle(Gate("Approval", Status.wait(30.0)))
    woken: list[str] = []
    cycle.on_permit_decided(lambda: woken.append("woken"))
    held = framework.waiting_binding(cycle.ctx.binding.key)
    assert held is not None
    held.reject("Approval", "not approved")
    assert woken == ["woken"]
    status = cycle.wait_on_permit()
    assert status is not None and status.is_rejection
    assert (status.plugin, status.reasons) == ("Approval", ("not approved",))


def test_a_decided_or_released_binding_calls_the_waiter_at_once() -> None:
    framework, cycle = held_cycle(Gate("Approval", Status.wait(30.0)))
    held = framework.waiting_binding(cycle.ctx.binding.key)
    assert held is not None
    held.allow("Approval")
    woken: list[str] = []
    cycle.on_permit_decided(lambda: woken.append("decided"))
    assert cycle.wait_on_permit() is not None  # released
    cycle.on_permit_decided(lambda: woken.append("released"))
    assert woken == ["decided", "released"]


def test_a_waiter_that_raises_does_not_fail_the_allowing_plugin() -> None:
    framework, cycle = held_cycle(Gate("Approval", Status.wait(30.0)))

    def gone() -> None:
        raise RuntimeError("Event loop is closed")

    woken: list[str] = []
    cycle.on_permit_decided(gone)
    cycle.on_permit_decided(lambda: woken.append("woken"))
    held = framework.waiting_binding(cycle.ctx.binding.key)
    assert held is not None
    held.allow("Approval")  # does not raise
    assert woken == ["woken"]


def test_the_timeout_calls_nothing_and_is_the_waiters_deadline_on_the_framework_clock() -> None:
    now = [100.0]
    _, cycle = held_cycle(Gate("Approval", Status.wait(30.0)), Gate("Quota", Status.wait(10.0)), now=now)
    woken: list[str] = []
    cycle.on_permit_decided(lambda: woken.append("woken"))
    assert cycle.permit_seconds_left() == 10.0  # the shortest wait bounds the binding
    now[0] += 4.0
    assert cycle.permit_seconds_left() == 6.0
    now[0] += 6.0
    assert cycle.permit_seconds_left() == 0.0 and woken == []
    status = cycle.wait_on_permit()
    assert status is not None and status.is_rejection and "rejected due to timeout" in status.message()
    assert cycle.permit_seconds_left() == 0.0  # no longer held
