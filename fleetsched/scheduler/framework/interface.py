"""The public plugin API of the scheduling framework: what a plugin is, what it is given, what it returns.

Owns the Protocols of every extension point, the ``Status`` value a plugin answers with, the
per-attempt ``CycleState``, the read-only views plugins read (``FilterContext`` over a frozen
``SchedulingBinding``; frozen ``ClusterInfo`` values), the declared-inputs contract that lets the
runtime reuse results across bindings, and the core Protocols of the edge objects (replica
estimators, HTTP extenders). Out-of-tree plugins import these names from ``fleetsched.plugin``;
the in-tree plugins use exactly the same API. Must not import a plugin, the runtime, or anything
that does I/O.

Extension points, in the order one binding meets them
=====================================================

Scheduling cycle (pure, run by ``Framework`` in ``runtime.py`` for one affinity term at a time):

1. ``QueueSort``  -- one per profile: ``less(a, b)`` over ``QueuedBindingInfo`` orders the active
   queue (default ``PrioritySort``: Karmada's ``schedulePriority`` descending, then FIFO).
2. ``PreFilter``  -- once per attempt: ``pre_filter(ctx) -> Status``. Unschedulable rejects the
   binding for every cluster (its reasons are the diagnosis); Skip leaves this plugin's Filter out
   for this attempt; it may put shared data into ``ctx.state`` for its other points.
3. ``Filter``     -- per cluster: ``filter(ctx, cluster) -> Status``. A plugin may also implement the
   batch face ``BatchFilterPlugin.filter_clusters(ctx, clusters)`` (same verdicts, work shared across
   clusters); the runtime then calls only that. Clusters being deleted are never offered.
   Extenders' filters run after every plugin filter (see ``Extender``).
4. ``PostFilter`` -- only when no cluster fits: ``post_filter(ctx, diagnosis) -> PostFilterResult``,
   to explain the failure or propose a change; it never turns the attempt into a success.
5. ``PreScore``   -- once, with the feasible clusters: ``pre_score(ctx, clusters) -> Status``
   (Skip leaves this plugin's Score out).
6. ``Score``      -- per feasible cluster: ``score(ctx, cluster) -> int`` (batch face
   ``BatchScorePlugin.score_clusters``). With ``NormalizeScorePlugin.normalize_score`` the raw scores
   of all feasible clusters are mapped to ``MIN_SCORE..MAX_SCORE``. The total of a cluster is
   ``sum(weight * normalised)`` over score plugins, plus ``sum(extender weight * score * 10)``.
   A score plugin that raises aborts the attempt (as in Karmada).
7. ``Reserve``    -- with the chosen placement, before it is written: ``reserve(ctx, targets)``; when
   the write (or a later binding-cycle point) fails, ``unreserve(ctx, targets)`` is called on every
   plugin that reserved, in reverse order.

Binding cycle (around the write, run by the edge through the same Framework):

8. ``Permit``     -- ``permit(ctx, targets) -> Status``: Success allows, Unschedulable denies (with
   its reasons), ``Status.wait(timeout_seconds)`` holds the write until every waiting plugin allows
   it (``WaitingBinding.allow``) or the timeout passes on the Framework's injected clock (then denied).
9. ``PreBind``    -- ``pre_bind(ctx, targets) -> Status``: a failure aborts the write (and unreserves).
10. ``PostBind``  -- ``post_bind(ctx, targets)`` after a successful write; informational.

``FilterContext.state`` is the ``CycleState`` of one attempt: plugins keep per-attempt scratch data
there (never on the plugin instance, which is shared by every binding and thread).

Results and errors
==================

An expected rejection is a value (``Status.unschedulable("reason")``), never an exception. An
exception raised by a plugin (any ``BaseException``, ``SystemExit`` and ``KeyboardInterrupt``
included, but the process's own shutdown; ``containment.py``) is a bug: the runtime attributes it to
the plugin and the extension point and fails that binding with a condition message naming both,
or -- when the profile lists the plugin in ``ignorable_plugins`` -- skips the plugin for this binding
and says so in the explanation.
The same holds for a call that took longer than ``Profile.plugin_timeout_seconds`` (measured after
the call returns: Python cannot preempt it), for an answer of the wrong kind, and for scores outside
kube-scheduler's bounds (an int, not a bool; within ``MIN_SCORE..MAX_SCORE`` after NormalizeScore or
for a plugin without it). A plugin that overruns repeatedly is marked broken for a while (its calls
fail at once). The views plugins read are deeply read-only (frozen dataclasses, tuples, ``MappingProxyType``;
``ClusterInfo.memo`` takes only keys of one's own): a mutation attempt raises and fails that binding.
The process never dies for a plugin.

The declared-inputs contract (what makes the core fast)
=======================================================

A plugin whose verdicts or scores can be reused across bindings says so by implementing
``DeclaresInputs``:

* ``binding_key(ctx) -> Hashable``: everything of the binding side its answer depends on (e.g. the
  tolerations and the current target names). Two contexts with equal keys must get equal answers
  for the same cluster. The key must be cheap and hashable; return a tuple of the frozen values.
  A plugin that reads ``binding.labels`` or ``binding.annotations``, or an object through
  ``Handle.listers``, puts the values it read into this key (a lister's content changes while the
  cluster snapshot does not); a plugin that cannot do so does not implement ``DeclaresInputs``.
* ``cluster_inputs: ClusterFacet``: every facet of a cluster its answer reads (``LABELS``,
  ``FIELDS`` = provider/region/zones, ``TAINTS``, ``API_ENABLEMENTS``, ``RESOURCES`` = resource
  summary and models, ``DELETION``). The cluster's name is always part of the key. A plugin that
  reads nothing of the cluster but its name declares ``ClusterFacet.NONE``.

The declaration covers all of the plugin's Filter, Score and NormalizeScore answers (NormalizeScore
sees only the raw scores of the feasible clusters, which the same inputs decide). A plugin whose
Score depends on less of the binding than its Filter may add ``score_key(ctx) -> Hashable``: the
Score answers are then keyed by it instead (ClusterAffinity's constant score returns ``()``).

Batch faces (``filter_clusters``, ``score_clusters``) are given the asked clusters as a
``ClusterSelection``: a tuple of ``ClusterInfo`` that also carries the snapshot's cluster tuple and
the asked clusters' positions in it, so a plugin may prepare data once per snapshot and answer by
position (ClusterAffinity's per-snapshot ``matching.ClusterIndex``).

The runtime keys memo entries by ``(plugin, binding_key)`` and stores them per cluster name together
with the declared facets' values at the time. An entry is reused only while those facet values are
unchanged (compared exactly, never by a hash): a resource-summary heartbeat on one cluster
invalidates that cluster's entries of the plugins declaring ``RESOURCES`` and nothing else. Answers
must not depend on anything undeclared (time, peers, ``ctx.state`` filled from undeclared inputs).
A plugin that does not implement ``DeclaresInputs`` is asked afresh every time and stays correct.
Memos are bounded and evict the least recently used entries one at a time.

Network calls and a pure core
=============================

Nothing in the core waits on a network. Replica estimators and extenders are edge objects behind
the Protocols below; the scheduling algorithm states what it needs at a step as request values
(``EstimateRequest``, ``ExtenderFilterRequest``, ``ExtenderPrioritizeRequest``) and hands all the
requests of one step to a ``Driver`` at once (``runtime.py``). The default driver performs them in
turn, in process (``fleetsched simulate``, in-process estimators); the operator, which runs the core
in a worker thread, may give a driver that performs one step's requests concurrently (on an event
loop or a thread pool) -- the core's results do not depend on which driver ran them.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Hashable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol, runtime_checkable

from fleetsched.scheduler.framework.listers import Lister, Listers
from fleetsched.scheduler.framework.plugin_metrics import PluginMetrics
from fleetsched.scheduler.types import (
    BindingStatus,
    ClusterInfo,
    ClusterSelection,
    Component,
    NamespaceInfo,
    PeerBinding,
    ReplicaRequirements,
    SchedulingBinding,
    TargetCluster,
)

__all__ = [
    "MAX_EXTENDER_PRIORITY",
    "MAX_SCORE",
    "MIN_SCORE",
    "UNAUTHENTIC_REPLICA",
    "BatchFilterPlugin",
    "BatchScorePlugin",
    "BindingStatus",
    "ClusterFacet",
    "ClusterInfo",
    "ClusterSelection",
    "Code",
    "ComponentSetEstimator",
    "CycleState",
    "DeclaresInputs",
    "EstimateRequest",
    "Extender",
    "ExtenderError",
    "ExtenderFilterRequest",
    "ExtenderFilterResult",
    "ExtenderPrioritizeRequest",
    "FilterContext",
    "FilterPlugin",
    "Handle",
    "Lister",
    "Listers",
    "NamespaceInfo",
    "NormalizeScorePlugin",
    "PermitPlugin",
    "Plugin",
    "PluginArgsError",
    "PluginFactory",
    "PluginMetrics",
    "PostBindPlugin",
    "PostFilterPlugin",
    "PostFilterResult",
    "PreBindPlugin",
    "PreFilterPlugin",
    "PreScorePlugin",
    "QueueSortPlugin",
    "QueuedBindingInfo",
    "ReplicaEstimator",
    "ReservePlugin",
    "Result",
    "SchedulingBinding",
    "ScorePlugin",
    "Status",
    "TargetCluster",
    "WaitingBinding",
]

# An estimator answers -1 for a cluster it cannot judge; the merge skips it (Karmada's
# ``UnauthenticReplica``).
UNAUTHENTIC_REPLICA = -1

# Bounds of a normalised score (kube-scheduler's MinNodeScore/MaxNodeScore; Karmada's plugins use 0..100).
MIN_SCORE = 0
MAX_SCORE = 100
# An extender's prioritize scores are 0..10 (kube-scheduler's MaxExtenderPriority).
MAX_EXTENDER_PRIORITY = 10


class Code(enum.Enum):
    """What a plugin's answer means. Values are the names kube-scheduler and Karmada print."""

    SUCCESS = "Success"
    # The cluster (or, from PreFilter, the binding) does not fit now; a cluster change may help.
    UNSCHEDULABLE = "Unschedulable"
    # Does not fit, and no change to other bindings could make it fit (kube-scheduler's meaning).
    UNSCHEDULABLE_AND_UNRESOLVABLE = "UnschedulableAndUnresolvable"
    # Something unexpected: a bug or a failed call. The binding fails with the plugin named.
    ERROR = "Error"
    # PreFilter/PreScore: this plugin has nothing to do for this attempt; its Filter/Score is left out.
    SKIP = "Skip"
    # Permit: hold the write until allowed or timed out.
    WAIT = "Wait"


@dataclass(frozen=True, slots=True)
class Status:
    """A plugin's answer at one extension point. A rejection is a value; ``ERROR`` is for the unexpected.

    ``plugin`` names the plugin that answered; the runtime fills it in where the plugin left it
    empty. ``timeout_seconds`` counts for ``WAIT`` only.
    """

    code: Code
    reasons: tuple[str, ...] = ()
    plugin: str = ""
    timeout_seconds: float = 0.0

    @classmethod
    def success(cls) -> Status:
        return _SUCCESS

    @classmethod
    def unschedulable(cls, *reasons: str) -> Status:
        return cls(Code.UNSCHEDULABLE, reasons)

    @classmethod
    def unresolvable(cls, *reasons: str) -> Status:
        return cls(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, reasons)

    @classmethod
    def error(cls, reason: str) -> Status:
        return cls(Code.ERROR, (reason,))

    @classmethod
    def skip(cls) -> Status:
        return _SKIP

    @classmethod
    def wait(cls, timeout_seconds: float, *reasons: str) -> Status:
        return cls(Code.WAIT, reasons, timeout_seconds=timeout_seconds)

    @property
    def is_success(self) -> bool:
        return self.code is Code.SUCCESS

    @property
    def is_rejection(self) -> bool:
        return self.code in (Code.UNSCHEDULABLE, Code.UNSCHEDULABLE_AND_UNRESOLVABLE)

    def message(self) -> str:
        return ", ".join(self.reasons)


# The name Karmada's framework uses for the same value; the in-tree plugins and older code use it.
Result = Status

_SUCCESS = Status(Code.SUCCESS)
_SKIP = Status(Code.SKIP)


class CycleState:
    """Scratch data of one scheduling attempt, shared between the points of the plugins.

    A plain mapping from a key the plugin chooses (its name, or a private object) to any value.
    It lives for one attempt (one affinity term of one binding) and the binding cycle after it.
    Never shared between bindings or threads.
    """

    __slots__ = ("_data",)

    def __init__(self) -> None:
        self._data: dict[Hashable, Any] = {}

    def read(self, key: Hashable) -> Any:
        """The value written under ``key``; ``KeyError`` when there is none."""
        return self._data[key]

    def get(self, key: Hashable, default: Any = None) -> Any:
        return self._data.get(key, default)

    def write(self, key: Hashable, value: Any) -> None:
        self._data[key] = value

    def delete(self, key: Hashable) -> None:
        self._data.pop(key, None)

    def __contains__(self, key: object) -> bool:
        return key in self._data


@dataclass(frozen=True, slots=True)
class FilterContext:
    """The read-only view of one scheduling attempt, passed to every extension point.

    ``binding`` is the frozen spec read; ``observed_affinity_name`` is the status'
    ``schedulerObservingAffinityName`` as the affinity-group loop set it for this attempt (§3.7),
    not necessarily the stored one. ``peers`` are the other ResourceBindings with their targets (read
    only by the gated workload (anti-)affinity plugins). ``state`` is this attempt's ``CycleState``.
    """

    binding: SchedulingBinding
    observed_affinity_name: str
    target_names: frozenset[str]
    is_workload: bool
    peers: tuple[PeerBinding, ...] = ()
    state: CycleState = field(default_factory=CycleState, compare=False, repr=False)

    def group_peers(self, group_of: Callable[[PeerBinding], str], group: str) -> Iterator[PeerBinding]:
        """The other bindings of ``group`` (as ``group_of`` reads a binding's group) in this binding's
        namespace, shared by WorkloadAffinity and WorkloadAntiAffinity (§5.7). The binding itself is
        told apart by its generated name, as Karmada does."""
        namespace, own_name = self.binding.namespace, self.binding.generated_name()
        return (
            peer
            for peer in self.peers
            if group_of(peer) == group and peer.namespace == namespace and peer.name != own_name
        )


@dataclass(frozen=True, slots=True)
class QueuedBindingInfo:
    """A waiting binding as QueueSort sees it: its queue key, ``spec.schedulePriority.priority``,
    when it (last) entered the active queue, and how many attempts it has had."""

    key: str
    priority: int
    timestamp: float
    attempts: int = 0


@dataclass(frozen=True, slots=True)
class PostFilterResult:
    """What a PostFilter plugin says when no cluster fits: an explanation, and optionally a proposed
    change (free text for the explanation, e.g. "untaint m2"). Neither makes the attempt succeed."""

    status: Status = _SUCCESS
    explanation: str = ""
    proposal: str = ""


class ClusterFacet(enum.Flag):
    """Parts of a cluster a plugin's answer may read (the cluster side of the declared inputs)."""

    NONE = 0
    LABELS = enum.auto()  # metadata.labels
    FIELDS = enum.auto()  # spec.provider, spec.region, spec.zone(s)
    TAINTS = enum.auto()  # spec.taints
    API_ENABLEMENTS = enum.auto()  # status.apiEnablements
    RESOURCES = enum.auto()  # status.resourceSummary and spec.resourceModels
    DELETION = enum.auto()  # metadata.deletionTimestamp


# ---- the plugin and its construction -------------------------------------------------------------


@runtime_checkable
class Plugin(Protocol):
    """Every plugin has a name (unique in a registry; Karmada's name for an in-tree plugin).

    Construction: a registry maps the name to a factory ``factory(args, handle) -> plugin``. A plugin
    class that takes arguments declares ``args_model``: a dataclass or a pydantic model type; the
    runtime validates the profile's raw ``pluginConfig`` args into it once, at start-up, and passes
    the instance as ``args`` (``None`` when the plugin declares no model). Plugins never read env vars
    or globals.
    """

    name: str


@runtime_checkable
class Handle(Protocol):
    """What a plugin may ask of the Framework that built it."""

    @property
    def profile_name(self) -> str:
        """The ``schedulerName`` of the profile this Framework serves."""
        ...

    def clock(self) -> float:
        """Monotonic seconds (injected; tests fake it)."""
        ...

    def waiting_binding(self, key: str) -> WaitingBinding | None:
        """The binding held at Permit under ``key``, if any (to allow or reject it)."""
        ...

    @property
    def listers(self) -> Listers:
        """Read-only listers of Namespaces, Clusters and bindings (``listers.py``). An answer that
        reads one must carry what it read in its ``binding_key``, or it must not declare inputs."""
        ...

    @property
    def metrics_registry(self) -> PluginMetrics:
        """Where the plugin registers its own metric collectors (``register(collector)``), exported
        on the live scheduler's ``/metrics`` (``plugin_metrics.py``)."""
        ...


PluginFactory = Callable[[Any, Handle], Plugin]


class PluginArgsError(ValueError):
    """A plugin's args do not validate against its ``args_model``, or a factory failed.

    The message names the profile, the plugin and the field, on one line.
    """

    def __init__(self, profile: str, plugin: str, field_path: str, reason: str) -> None:
        where = f"profiles[{profile}].pluginConfig[{plugin}].args"
        if field_path:
            where += f".{field_path}"
        super().__init__(f"{where}: {reason}")
        self.profile = profile
        self.plugin = plugin
        self.field_path = field_path
        self.reason = reason


# ---- extension points of the scheduling cycle ----------------------------------------------------


@runtime_checkable
class QueueSortPlugin(Protocol):
    name: str

    def less(self, a: QueuedBindingInfo, b: QueuedBindingInfo) -> bool:
        """True when ``a`` should be scheduled before ``b``."""
        ...


@runtime_checkable
class PreFilterPlugin(Protocol):
    name: str

    def pre_filter(self, ctx: FilterContext) -> Status:
        """Once per attempt: Success, a rejection of the binding, or Skip (its Filter is left out)."""
        ...


@runtime_checkable
class FilterPlugin(Protocol):
    name: str

    def filter(self, ctx: FilterContext, cluster: ClusterInfo) -> Status:
        """Pass, or reject with Karmada's reason text."""
        ...


@runtime_checkable
class BatchFilterPlugin(FilterPlugin, Protocol):
    """Optional face of a Filter plugin: the verdicts of every cluster at once, in the order given."""

    def filter_clusters(self, ctx: FilterContext, clusters: Sequence[ClusterInfo]) -> Sequence[Status]: ...


@runtime_checkable
class PostFilterPlugin(Protocol):
    name: str

    def post_filter(self, ctx: FilterContext, diagnosis: Mapping[str, Status]) -> PostFilterResult:
        """No cluster fits; ``diagnosis`` maps each rejected cluster's name to its first rejection."""
        ...


@runtime_checkable
class PreScorePlugin(Protocol):
    name: str

    def pre_score(self, ctx: FilterContext, clusters: Sequence[ClusterInfo]) -> Status:
        """Once, with the feasible clusters: Success, Skip (this plugin's Score is left out), or Error."""
        ...


@runtime_checkable
class ScorePlugin(Protocol):
    name: str

    def score(self, ctx: FilterContext, cluster: ClusterInfo) -> int:
        """Raw score of one feasible cluster (Karmada's scores are already 0..100)."""
        ...


@runtime_checkable
class BatchScorePlugin(ScorePlugin, Protocol):
    """Optional face of a Score plugin: raw scores of every cluster at once, in the order given."""

    def score_clusters(self, ctx: FilterContext, clusters: Sequence[ClusterInfo]) -> Sequence[int]: ...


@runtime_checkable
class NormalizeScorePlugin(ScorePlugin, Protocol):
    """Optional face of a Score plugin (kube-scheduler's ScoreExtensions)."""

    def normalize_score(
        self, ctx: FilterContext, clusters: Sequence[ClusterInfo], scores: Sequence[int]
    ) -> Sequence[int]:
        """Map the raw scores of all feasible clusters (same order) to MIN_SCORE..MAX_SCORE."""
        ...


@runtime_checkable
class DeclaresInputs(Protocol):
    """The declared-inputs contract (module docstring): what a plugin's Filter/Score answer reads."""

    cluster_inputs: ClassVar[ClusterFacet]

    def binding_key(self, ctx: FilterContext) -> Hashable:
        """Everything of the binding side the answer depends on."""
        ...


@runtime_checkable
class ReservePlugin(Protocol):
    name: str

    def reserve(self, ctx: FilterContext, targets: Sequence[TargetCluster]) -> Status:
        """The chosen placement, before it is written. A failure aborts the write."""
        ...

    def unreserve(self, ctx: FilterContext, targets: Sequence[TargetCluster]) -> None:
        """Undo ``reserve``: the write (or a later point) failed. Must not raise."""
        ...


# ---- extension points of the binding cycle -------------------------------------------------------


@runtime_checkable
class PermitPlugin(Protocol):
    name: str

    def permit(self, ctx: FilterContext, targets: Sequence[TargetCluster]) -> Status:
        """Success (allow), a rejection (deny, with the reason), or ``Status.wait(timeout)``."""
        ...


@runtime_checkable
class PreBindPlugin(Protocol):
    name: str

    def pre_bind(self, ctx: FilterContext, targets: Sequence[TargetCluster]) -> Status:
        """Just before the write; a failure aborts it."""
        ...


@runtime_checkable
class PostBindPlugin(Protocol):
    name: str

    def post_bind(self, ctx: FilterContext, targets: Sequence[TargetCluster]) -> None:
        """After a successful write; informational."""
        ...


class WaitingBinding(Protocol):
    """A binding held at Permit. Plugins (through ``Handle.waiting_binding``) allow or reject it."""

    @property
    def key(self) -> str: ...

    def pending_plugins(self) -> tuple[str, ...]: ...

    def allow(self, plugin: str) -> None: ...

    def reject(self, plugin: str, reason: str) -> None: ...


# ---- edge objects behind core Protocols ----------------------------------------------------------


@runtime_checkable
class ReplicaEstimator(Protocol):
    """How many more replicas of one per-replica requirement fit in each cluster.

    Returns one int per cluster, in the order given; ``UNAUTHENTIC_REPLICA`` (-1) means "cannot
    tell" for that cluster. Raising means the whole answer is ignored for this attempt (§7.1, §7.4).
    """

    name: str

    def max_available_replicas(
        self, clusters: Sequence[ClusterInfo], replica_requirements: ReplicaRequirements | None
    ) -> list[int]: ...


@runtime_checkable
class ComponentSetEstimator(Protocol):
    """Optional second face of an estimator: complete component sets per cluster (§12, alpha).

    Only asked when the ``MultiplePodTemplatesScheduling`` gate is on and the binding qualifies;
    estimators without it are skipped on that path. Same -1 and raising rules as above.
    """

    name: str

    def max_available_component_sets(
        self, clusters: Sequence[ClusterInfo], components: Sequence[Component]
    ) -> list[int]: ...


class ExtenderError(Exception):
    """An extender call failed: unreachable, timed out, an error status, or a malformed answer.
    The message says which; the runtime names the extender."""


@dataclass(frozen=True, slots=True)
class ExtenderFilterResult:
    """An extender's filter answer: the clusters it keeps, and the rejected ones with a reason each
    (``failed``: may fit later; ``unresolvable``: kube-scheduler's FailedAndUnresolvableNodes)."""

    kept: tuple[str, ...]
    failed: Mapping[str, str] = field(default_factory=dict)
    unresolvable: Mapping[str, str] = field(default_factory=dict)


@runtime_checkable
class Extender(Protocol):
    """An HTTP(S) extender as the core sees it (kube-scheduler's extender, Node replaced by Cluster).

    ``filter`` runs after every plugin filter, over the clusters they kept, one extender after the
    other; it answers an ``ExtenderFilterResult`` (or any value of its shape). ``prioritize`` answers
    0..``MAX_EXTENDER_PRIORITY`` per cluster (unlisted: 0), and ``score * weight * MAX_SCORE /
    MAX_EXTENDER_PRIORITY`` is added to each cluster's total (kube-scheduler's rule). A call raises
    (``ExtenderError`` or the edge's own error) on any failure: an ``ignorable`` extender is then
    skipped (recorded for the explanation), any other fails the binding with a message naming it.
    """

    @property
    def name(self) -> str: ...

    @property
    def ignorable(self) -> bool: ...

    @property
    def weight(self) -> int: ...

    @property
    def supports_filter(self) -> bool: ...

    @property
    def supports_prioritize(self) -> bool: ...

    def filter(self, binding: SchedulingBinding, clusters: Sequence[ClusterInfo]) -> ExtenderFilterResult: ...

    def prioritize(
        self, binding: SchedulingBinding, clusters: Sequence[ClusterInfo]
    ) -> Mapping[str, int]: ...


# ---- what the core asks the edge to perform (sans-IO requests) ----------------------------------


@dataclass(frozen=True, slots=True)
class EstimateRequest:
    """Ask one estimator how many replicas (or, with ``components``, component sets) fit in each of
    ``clusters``. The answer is a list of ints in cluster order, or the exception it raised."""

    estimator: ReplicaEstimator
    clusters: tuple[ClusterInfo, ...]
    replica_requirements: ReplicaRequirements | None
    components: tuple[Component, ...] = ()


@dataclass(frozen=True, slots=True)
class ExtenderFilterRequest:
    """Ask one extender to filter ``clusters`` for ``binding``; answered by an ExtenderFilterResult."""

    extender: Extender
    binding: SchedulingBinding
    clusters: tuple[ClusterInfo, ...]


@dataclass(frozen=True, slots=True)
class ExtenderPrioritizeRequest:
    """Ask one extender to score ``clusters`` for ``binding``; answered by a name -> score mapping."""

    extender: Extender
    binding: SchedulingBinding
    clusters: tuple[ClusterInfo, ...]
