"""``fleetsched explain``: the command-line face (``add_arguments``/``run``) of ``command``."""

from __future__ import annotations

from fleetsched.live.command import add_explain_arguments as add_arguments
from fleetsched.live.command import run_explain as run

__all__ = ["add_arguments", "run"]
