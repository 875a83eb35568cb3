"""The pure scheduling core: filter, score, estimate, select and assign for one binding.

No network, no Kubernetes client, no kopf or grpc. Callers convert API objects once
(``convert``), build a ``Snapshot`` of clusters, and call ``Scheduler.schedule``; results are
written back with ``outcome.render_into_binding``.
"""

from fleetsched.scheduler.framework import ReplicaEstimator
from fleetsched.scheduler.outcome import ScheduleResult, render_into_binding
from fleetsched.scheduler.pipeline import Scheduler, Settings
from fleetsched.scheduler.snapshot import Snapshot

__all__ = ["ReplicaEstimator", "ScheduleResult", "Scheduler", "Settings", "Snapshot", "render_into_binding"]
