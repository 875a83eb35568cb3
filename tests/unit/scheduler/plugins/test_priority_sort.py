from __future__ import annotations

import functools

from hypothesis import given
from hypothesis import strategies as st

from fleetsched.plugin import QueuedBindingInfo, QueueSortPlugin
from fleetsched.scheduler.plugins.priority_sort import PrioritySort

_plugin: QueueSortPlugin = PrioritySort()  # checked by mypy against the Protocol


def _cmp(a: QueuedBindingInfo, b: QueuedBindingInfo) -> int:
    return -1 if _plugin.less(a, b) else (1 if _plugin.less(b, a) else 0)


@given(st.lists(st.tuples(st.integers(-3, 3), st.integers(0, 5)), max_size=12))
def test_priority_sort_is_karmadas_queue_order(entries: list[tuple[int, int]]) -> None:
    infos = [QueuedBindingInfo(f"k{i}", p, float(t)) for i, (p, t) in enumerate(entries)]
    by_plugin = sorted(infos, key=functools.cmp_to_key(_cmp))
    assert [(i.priority, i.timestamp) for i in by_plugin] == sorted(
        ((i.priority, i.timestamp) for i in infos), key=lambda pt: (-pt[0], pt[1])
    )
