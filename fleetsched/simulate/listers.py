"""``simulate``'s listers: the plugins' read-only views over the input objects.

Namespaces are the input's Namespace documents, Clusters the input's Clusters, bindings the ones
scheduled (given and derived), parsed from their compact JSON only when a plugin first reads the
binding lister. Must not read anything but the input (no apiserver).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from fleetsched.scheduler.convert import binding_from_dict, namespace_from_dict
from fleetsched.scheduler.framework.listers import Listers, MappingLister, SourceLister
from fleetsched.scheduler.types import ClusterInfo, SchedulingBinding


class _Lazy:
    """A mapping built on first use (the bindings: parsing them all costs when nothing reads them)."""

    def __init__(self, build: Callable[[], dict[str, SchedulingBinding]]) -> None:
        self._build = build
        self._items: dict[str, SchedulingBinding] | None = None

    def items(self) -> dict[str, SchedulingBinding]:
        if self._items is None:
            self._items = self._build()
        return self._items


def attach_input(
    cores: Iterable[object],
    *,
    namespaces: Sequence[Mapping[str, Any]],
    clusters: Sequence[ClusterInfo],
    work: Sequence[tuple[bytes, bool]],
) -> None:
    """Back the listers of every core (a ``Scheduler`` per profile) with the input objects."""

    def bindings() -> dict[str, SchedulingBinding]:
        out: dict[str, SchedulingBinding] = {}
        for data, _ in work:
            binding = binding_from_dict(json.loads(data))
            out[binding.key] = binding
        return out

    lazy = _Lazy(bindings)
    ns = MappingLister({n.name: n for n in map(namespace_from_dict, namespaces)})
    cl = MappingLister({c.name: c for c in clusters})
    rb = SourceLister(lambda key: lazy.items().get(key), lambda: lazy.items().values())
    seen: set[int] = set()
    for core in cores:
        listers = getattr(getattr(core, "framework", None), "listers", None)
        if isinstance(listers, Listers) and id(listers) not in seen:
            seen.add(id(listers))
            listers.attach(namespaces=ns, clusters=cl, bindings=rb)
