"""``fleetsched what-if``: the command-line face (``add_arguments``/``run``) of ``command``."""

from __future__ import annotations

from fleetsched.live.command import add_what_if_arguments as add_arguments
from fleetsched.live.command import run_what_if as run

__all__ = ["add_arguments", "run"]
