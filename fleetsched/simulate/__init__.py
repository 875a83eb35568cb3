"""``fleetsched simulate``: the whole scheduling pipeline offline, from YAML files to scheduled bindings.

Owns the command line (files, output format, ``--explain``, plugins or ``--config``, ``--jobs``,
``--progress``), turning loaded objects into a cluster snapshot and bindings (given directly, or
derived from policies and workload templates by the detector), scheduling each binding
independently against the same snapshot (no binding's result changes another's) and printing
the result. Bad input is one line on stderr and exit status 2; a binding that cannot be placed is
a result, not an error.

Without ``--config`` every binding is scheduled by the one profile the flags describe, whatever its
``spec.schedulerName`` (as before configuration files existed). With ``--config`` each binding goes
to the profile of its ``spec.schedulerName`` (empty: ``default-scheduler``), as the live scheduler
does; a binding no profile serves is printed as given, with a note.

Large inputs, binding by binding: every binding is validated and converted once up front (so bad
input is refused before anything is written), then kept only as the compact JSON of its fields as
given (``BindingDocument``); scheduling decodes, schedules, renders and writes one binding at a
time, in input order, in this process or in ``--jobs`` worker processes that each build the
snapshot once and take bindings in chunks. ``-o json|yaml`` is written as it is produced, with the
same bytes as one dump of the whole ``List``; only the table (its column widths need every row)
keeps one row of text per binding.

With the gate ``SchedulingOvercommitProtection`` (``--feature-gates`` or the file's
``featureGates``) the bindings are not independent: they are scheduled one at a time, in this
process, in the order the live queue takes them (``spec.schedulePriority.priority`` descending,
then input order), each against one assume record (``scheduler/assume.py``, its clock standing
still so nothing expires) that every placement before it fed, as the live scheduler does
(``schedule_one._attempt``). A binding short of capacity says what the record held; ``--explain``
shows each binding's place in the queue and, per candidate cluster, the capacity deducted. The
output keeps input order.

The package, by responsibility: ``command`` (the command line and the run), ``plan`` (what will be
scheduled: given and derived bindings, validated up front), ``pool`` (scheduling in this process,
in worker processes, or in queue order against one assume record), ``explain`` (the table's rows
and ``--explain``), ``output`` (streaming ``-o json|yaml`` and the table) and ``progress``.
"""

from __future__ import annotations

from fleetsched.simulate.command import (
    EXIT_BAD_INPUT,
    EXIT_UNSCHEDULABLE,
    add_arguments,
    run,
    simulate_objects,
)
from fleetsched.simulate.explain import explain
from fleetsched.simulate.plan import merge_bindings, unknown_target_notes
from fleetsched.simulate.pool import queue_order
from fleetsched.simulate.progress import Progress

__all__ = [
    "EXIT_BAD_INPUT",
    "EXIT_UNSCHEDULABLE",
    "Progress",
    "add_arguments",
    "explain",
    "merge_bindings",
    "queue_order",
    "run",
    "simulate_objects",
    "unknown_target_notes",
]
