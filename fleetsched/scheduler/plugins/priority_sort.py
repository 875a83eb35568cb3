"""PrioritySort queue sort: higher ``spec.schedulePriority`` first, then first come first served (§3.2).

Karmada hard-codes this order in its scheduling queue; kube-scheduler calls the same plugin
PrioritySort. It is the default (and only in-tree) QueueSort plugin.
"""

from __future__ import annotations

from fleetsched.plugin import Handle, QueuedBindingInfo

NAME = "PrioritySort"


class PrioritySort:
    """Orders the active queue by priority (descending), then by the time a key entered it."""

    name = NAME

    def less(self, a: QueuedBindingInfo, b: QueuedBindingInfo) -> bool:
        """``a`` goes first when its priority is higher, or equal and it has waited longer."""
        if a.priority != b.priority:
            return a.priority > b.priority
        return a.timestamp < b.timestamp


def new(args: object, handle: Handle) -> PrioritySort:
    """The registry's factory (takes no args)."""
    return PrioritySort()
