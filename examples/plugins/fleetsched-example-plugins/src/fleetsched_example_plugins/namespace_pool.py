"""``ExampleNamespacePool``: a Filter plugin that sends a namespace's bindings to its pool of clusters.

A Namespace labelled ``pool.example.com/name=gpu`` (the key is an arg) sends its bindings only to
clusters with the same label and value. A binding's own label of that key (on the
ResourceBinding, e.g. copied there by the policy) takes precedence over its namespace's. A binding
with no pool, from either, may go anywhere. ClusterResourceBindings use their resource's namespace.

It shows three parts of the plugin API:

* the binding's labels in the read-only view (``ctx.binding.labels``);
* a lister through the Handle (``handle.listers.namespaces()``): the namespace's labels, read from
  the live scheduler's Namespace watch (started because this plugin asked for the lister) or from
  the Namespace documents of ``fleetsched simulate``'s input;
* its own metric, registered through ``handle.metrics_registry``: how often the pool came from the
  binding, the namespace, or nowhere (``fleetsched_example_namespace_pool_lookups_total``).

Declared inputs: the verdict reads the cluster's labels and the pool. The pool is read once per
attempt (``binding_key``, kept in ``ctx.state`` for ``filter``), so the memo key always carries
the very value the verdict was computed from, however the Namespace changes in between.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass
from typing import ClassVar

from prometheus_client import Counter

from fleetsched.plugin import ClusterFacet, ClusterInfo, FilterContext, Handle, Status

NAME = "ExampleNamespacePool"
DEFAULT_LABEL = "pool.example.com/name"

# One collector per process, whatever the number of profiles enabling the plugin: created without a
# registry, handed to the scheduler's through the Handle (which keeps each collector once).
LOOKUPS = Counter(
    "fleetsched_example_namespace_pool_lookups_total",
    "Pool look-ups of ExampleNamespacePool, by where the pool came from (binding, namespace, none)",
    ["source"],
    registry=None,
)


@dataclass(frozen=True, slots=True)
class ExampleNamespacePoolArgs:
    """``pluginConfig`` args, field names as the configuration file writes them."""

    labelKey: str = DEFAULT_LABEL

    def __post_init__(self) -> None:
        if not isinstance(self.labelKey, str) or not self.labelKey:
            raise ValueError(f"labelKey: must be a non-empty label key, got {self.labelKey!r}")


class ExampleNamespacePool:
    """Only clusters of the pool named by the binding's label or its namespace's."""

    name = NAME
    args_model = ExampleNamespacePoolArgs
    cluster_inputs: ClassVar[ClusterFacet] = ClusterFacet.LABELS

    def __init__(self, args: ExampleNamespacePoolArgs | None, handle: Handle) -> None:
        self.label_key = (args or ExampleNamespacePoolArgs()).labelKey
        # Asked once, here: the live scheduler watches Namespaces only for plugins that ask.
        self.namespaces = handle.listers.namespaces()
        handle.metrics_registry.register(LOOKUPS)
        self._state_key = (NAME, self.label_key)

    def pool(self, ctx: FilterContext) -> str:
        """The binding's pool, read once per attempt and kept in the attempt's state."""
        found = ctx.state.get(self._state_key)
        if found is not None:
            return str(found)
        binding = ctx.binding
        pool = binding.labels.get(self.label_key)
        source = "binding"
        if pool is None:
            namespace = self.namespaces.get(binding.namespace or binding.resource.namespace)
            pool = namespace.labels.get(self.label_key) if namespace is not None else None
            source = "namespace" if pool is not None else "none"
        LOOKUPS.labels(source).inc()
        ctx.state.write(self._state_key, pool or "")
        return pool or ""

    def binding_key(self, ctx: FilterContext) -> Hashable:
        return self.pool(ctx)

    def filter(self, ctx: FilterContext, cluster: ClusterInfo) -> Status:
        pool = self.pool(ctx)
        if not pool or cluster.labels.get(self.label_key) == pool:
            return Status.success()
        return Status.unschedulable(f"cluster(s) not in pool {self.label_key}={pool}")
