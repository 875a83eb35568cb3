"""The assume record at the scheduler's edge (gate SchedulingOvercommitProtection), in one place:
the object the scheduler assumes, forgets and observes through (``record.py``), its feed from the
watched bindings (``feed.py``), and the shard group's ledger (``ledger.py``, its entries
``entries.py``). The core's record and its arithmetic are ``fleetsched.scheduler.assume`` and
``fleetsched.scheduler.refit``."""

from __future__ import annotations

from fleetsched.controller.scheduler.assume.record import Assumption, NoRecord, Record, WatchedRecord

__all__ = ["Assumption", "NoRecord", "Record", "WatchedRecord"]
