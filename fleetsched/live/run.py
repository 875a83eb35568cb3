"""``fleetsched simulate`` run in this process on a list of objects: the same command, flags and
output, on a temporary file holding the objects (one ``List``), its stdout and stderr captured."""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import io
import json
import os
import tempfile
from collections.abc import Mapping, Sequence
from typing import Any


@dataclasses.dataclass(frozen=True, slots=True)
class Simulated:
    status: int
    stdout: str
    stderr: str


def simulate(objects: Sequence[Mapping[str, Any]], flags: Sequence[str]) -> Simulated:
    """``fleetsched simulate FILE *flags`` where FILE holds ``objects``."""
    from fleetsched import simulate as simulate_command

    parser = argparse.ArgumentParser(prog="fleetsched simulate")
    simulate_command.add_arguments(parser)
    fd, path = tempfile.mkstemp(prefix="fleetsched-live-", suffix=".json")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            # JSON is YAML: the file is read by the same hardened loader as any input.
            json.dump({"apiVersion": "v1", "kind": "List", "items": list(objects)}, f)
        args = parser.parse_args([path, *flags])
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            status = simulate_command.run(args)
        return Simulated(status, out.getvalue(), err.getvalue().replace(path, "<live state>"))
    finally:
        os.unlink(path)
