"""Checkpoints: where a caller that bounds one binding's scheduling time may stop the attempt.

A caller runs ``Scheduler.schedule`` inside ``with checkpointing(fn):``; ``fn`` is called at each
``checkpoint()`` (before each affinity term, after each extension point and each filter and score
plugin) and stops the attempt by raising. The hook is a context variable, so no signature changes;
the core neither knows nor catches what ``fn`` raises. Without one, ``checkpoint()`` does nothing.

Its own module (``groups`` re-exports both names) so that the framework runtime needs nothing of the
algorithm: the runtime -> groups -> pipeline -> runtime circle is gone.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Callable, Iterator

__all__ = ["checkpoint", "checkpointing"]

_CHECKPOINT: contextvars.ContextVar[Callable[[], None] | None] = contextvars.ContextVar(
    "fleetsched_scheduler_checkpoint", default=None
)


@contextlib.contextmanager
def checkpointing(check: Callable[[], None]) -> Iterator[None]:
    """Call ``check`` at each checkpoint of the scheduling done inside this block (this context)."""
    token = _CHECKPOINT.set(check)
    try:
        yield
    finally:
        _CHECKPOINT.reset(token)


def checkpoint() -> None:
    """A point where a budgeted caller may stop the attempt (its check raises); else a no-op."""
    check = _CHECKPOINT.get()
    if check is not None:
        check()
