"""Live explain and what-if: the simulate pipeline run on the state an API server holds.

``fleetsched explain rb/NAMESPACE/NAME`` reads the live Clusters and one binding and prints the
per-cluster story ``fleetsched simulate --explain`` prints for that binding on the same objects;
``fleetsched what-if -f FILE…`` overlays objects from files on the live state, schedules the state
before and after, and prints which bindings would change (``diff``). Both only read: nothing is
written to the API server. Both are also ``kubectl fleetsched …`` (the ``kubectl-fleetsched``
executable installed beside ``fleetsched``).

The package owns reading the live state (``state``), running simulate in this process on a list of
objects (``run``) and the comparison (``diff``, pure). It must not re-implement scheduling,
derivation or the explanation: those are ``fleetsched.simulate``'s and the detector's.
"""

from __future__ import annotations

from fleetsched.live.diff import BindingChange, Placement, WhatIf, compare, overlay

__all__ = ["BindingChange", "Placement", "WhatIf", "compare", "overlay"]
