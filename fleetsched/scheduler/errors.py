"""Error values of one scheduling attempt, mapped to the Scheduled condition.

Owns the FitError message format and the three kinds Karmada distinguishes: a FitError (no
cluster passed the filters: NoClusterFit, targets cleared), an UnschedulableError (not enough
capacity: Unschedulable) and everything else (SchedulerError). Pure.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping

__all__ = ["FitError", "SchedulingError", "UnschedulableError", "fit_error_message"]


class SchedulingError(Exception):
    """A failed attempt whose condition reason is ``SchedulerError`` unless a subclass says otherwise."""

    reason = "SchedulerError"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def wrapped(self, prefix: str) -> SchedulingError:
        """The same kind of error with Karmada's ``<prefix>: <inner>`` text."""
        err = type(self).__new__(type(self))
        SchedulingError.__init__(err, f"{prefix}: {self.message}")
        return err

    def __str__(self) -> str:
        return self.message


class UnschedulableError(SchedulingError):
    reason = "Unschedulable"


class FitError(SchedulingError):
    """No cluster passed the filters."""

    reason = "NoClusterFit"

    def __init__(self, num_all_clusters: int, diagnosis: Mapping[str, tuple[str, ...]]) -> None:
        super().__init__(fit_error_message(num_all_clusters, diagnosis))
        self.num_all_clusters = num_all_clusters
        self.diagnosis = dict(diagnosis)


def fit_error_message(num_all_clusters: int, diagnosis: Mapping[str, tuple[str, ...]]) -> str:
    """``0/N clusters are available: <count> <reason>, ...`` sorted as plain strings (§4.2)."""
    if num_all_clusters == 0 or not diagnosis:
        return f"0/{num_all_clusters} clusters are available: no cluster exists."
    counts: Counter[str] = Counter()
    for reasons in diagnosis.values():
        counts.update(reasons)
    parts = sorted(f"{n} {reason}" for reason, n in counts.items())
    return f"0/{num_all_clusters} clusters are available: {', '.join(parts)}."
