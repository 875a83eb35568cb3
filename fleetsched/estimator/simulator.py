"""First-fit placement over nodes in order (karmada-scheduler-estimator's
scheduling simulator).

Used for component sets and for deducting assumed workloads. State is the ordered node list with
mutable free amounts. A set places its components in request order; each replica goes to the first node
(in order) that admits the component and still fits it. Resources consumed by a set that fails are not
given back. A component with zero replicas always succeeds.

Speed: free amounts only ever decrease during a simulation, so a node on which a component fits zero
replicas stays that way. Each component keeps a cursor past such leading nodes, which makes repeated
sets cost O(components) instead of O(nodes) each while the front of the list has room.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from fleetsched.api.resources import PODS
from fleetsched.estimator.model import MAX_INT32

__all__ = ["FirstFit", "SimComponent"]


@dataclass(frozen=True, slots=True)
class SimComponent:
    """One component as the simulator needs it: who admits it, what one replica takes, how many."""

    mask: np.ndarray
    demand: tuple[tuple[str, int], ...]
    replicas: int


class FirstFit:
    def __init__(self, free: dict[str, np.ndarray], order: Sequence[int]) -> None:
        self._free: dict[str, list[int]] = {name: column.tolist() for name, column in free.items()}
        self._order = list(order)

    def arrays(self, like: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """The free amounts after placement, as arrays shaped like ``like``."""
        return {name: np.array(values, dtype=like[name].dtype) for name, values in self._free.items()}

    def _fits(self, slot: int, demand: tuple[tuple[str, int], ...]) -> int:
        k = self._free[PODS][slot]
        for name, amount in demand:
            column = self._free.get(name)
            if column is None:
                return 0
            k = min(k, column[slot] // amount)
            if k <= 0:
                return 0
        return k

    def _place(self, component: SimComponent, cursors: list[int], index: int) -> bool:
        remaining = component.replicas
        if remaining <= 0:
            return True
        mask = component.mask
        demand = component.demand
        position = cursors[index]
        leading = True  # every node scanned so far is dead for this component
        order = self._order
        pods = self._free[PODS]
        while position < len(order):
            slot = order[position]
            k = self._fits(slot, demand) if mask[slot] else 0
            if k <= 0:
                if leading:
                    cursors[index] = position + 1
                position += 1
                continue
            take = k if k < remaining else remaining
            for name, amount in demand:
                column = self._free[name]
                column[slot] = max(column[slot] - take * amount, 0)
            pods[slot] = max(pods[slot] - take, 0)
            remaining -= take
            if leading and take == k:
                cursors[index] = position + 1
            else:
                leading = False
            if remaining == 0:
                return True
            position += 1
        return False

    def simulate(self, components: Sequence[SimComponent], upper: int, *, keep_state: bool = True) -> int:
        """Place whole sets until one fails or ``upper`` sets were placed; return the count.

        ``keep_state=False`` allows answering without updating the free amounts (nothing reads them
        afterwards), which makes a single-component request one pass over the nodes.
        """
        if not components:
            return upper
        if all(c.replicas <= 0 for c in components):
            # Go loops here up to the bound without ever failing; short-circuit (spec 3.8 note).
            return min(upper, MAX_INT32)
        active = [c for c in components if c.replicas > 0]
        if len(active) == 1 and not keep_state:
            # One component: a node fits the same number of its replicas however they are split into
            # sets, so first fit places floor(total / replicas) sets. Same answer, one pass.
            only = active[0]
            total = sum(self._fits(slot, only.demand) for slot in self._order if only.mask[slot])
            return min(total // only.replicas, upper)
        cursors = [0] * len(components)
        count = 0
        while count < upper:
            for index, component in enumerate(components):
                if not self._place(component, cursors, index):
                    return count
            count += 1
        return count
