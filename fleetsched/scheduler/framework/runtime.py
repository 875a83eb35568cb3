"""The framework runtime: one ``Framework`` per profile, built from a registry, running the plugins.

Owns the construction of a profile's plugins (args validated by each plugin's ``args_model``), the
run order of the extension points, weights and NormalizeScore, timing per plugin and point through
an injected observer (no metrics import here), the attribution of errors and overruns to a plugin,
and ALL memoisation of plugin answers (see the declared-inputs contract in ``interface.py``).

Network calls: the algorithm asks for estimates and extender calls as request values, all the
requests of one step at once, and a ``Driver`` performs them (``SerialDriver``: in turn, in process).
No I/O here.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol

__all__ = [
    "STEPS",
    "STEP_ASSIGN_REPLICAS",
    "STEP_FILTER",
    "STEP_SCORE",
    "STEP_SELECT",
    "Driver",
    "Observer",
    "SerialDriver",
]

# The generic scheduler's steps, under Karmada's names (the ``schedule_step`` label of
# karmada_scheduler_scheduling_algorithm_duration_seconds).
STEP_FILTER = "Filter"
STEP_SCORE = "Score"
STEP_SELECT = "Select"
STEP_ASSIGN_REPLICAS = "AssignReplicas"
STEPS: tuple[str, ...] = (STEP_FILTER, STEP_SCORE, STEP_SELECT, STEP_ASSIGN_REPLICAS)

# Called with (plugin, extension point, result code value, seconds) for each plugin call the runtime
# times; the operator exports it as karmada_scheduler_plugin_execution_duration_seconds.
Observer = Callable[[str, str, str, float], None]


class Driver(Protocol):
    """Performs the requests of one step; returns one answer per request, in order, where an answer
    is the call's value or the exception it raised (never raised itself)."""

    def perform(self, requests: Sequence[Any]) -> list[Any]: ...


class SerialDriver:
    """Performs each request in turn, in the calling thread."""

    def perform(self, requests: Sequence[Any]) -> list[Any]:
        from fleetsched.scheduler.framework.interface import (
            EstimateRequest,
            ExtenderFilterRequest,
            ExtenderPrioritizeRequest,
        )

        answers: list[Any] = []
        for request in requests:
            try:
                if isinstance(request, EstimateRequest):
                    if request.components:
                        answers.append(
                            request.estimator.max_available_component_sets(  # type: ignore[attr-defined]
                                request.clusters, request.components
                            )
                        )
                    else:
                        answers.append(
                            request.estimator.max_available_replicas(
                                request.clusters, request.replica_requirements
                            )
                        )
                elif isinstance(request, ExtenderFilterRequest):
                    answers.append(request.extender.filter(request.binding, request.clusters))
                elif isinstance(request, ExtenderPrioritizeRequest):
                    answers.append(request.extender.prioritize(request.binding, request.clusters))
                else:
                    answers.append(TypeError(f"unknown request {type(request).__name__}"))
            except Exception as e:  # an answer, not a crash: the algorithm decides what a failure means
                answers.append(e)
        return answers
