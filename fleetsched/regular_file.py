"""Reading a file that must be a regular file of bounded size, for every input the project reads.

The one reader of configuration files, offline inputs (``simulate``, ``estimate``, ``what-if``),
PEM files and token files: a device, FIFO, socket or directory is refused before anything is read
(``/dev/zero`` would otherwise be read until memory runs out, and opening a FIFO blocks until a
writer comes), and so is a file holding more than the limit. The file is opened without blocking
and read once, through the descriptor that was checked.

It imports nothing of fleetsched: ``kube/`` (token files) and ``api/`` (YAML inputs) both use it,
each turning ``FileRefused`` into its own one-line error.
"""

from __future__ import annotations

import os
import stat

__all__ = ["FileRefused", "read_regular"]


class FileRefused(ValueError):
    """A file that cannot be read or is not acceptable. ``detail`` is the reason without the file's
    name or kind (``not a regular file``, ``No such file or directory``, ``holds 5 bytes, more than
    the 4 allowed``); ``str()`` names the kind of file: ``cannot read the token file: ...``."""

    def __init__(self, path: str, what: str, detail: str, *, too_large: bool = False) -> None:
        self.path = path
        self.what = what
        self.detail = detail
        super().__init__(f"the {what} {detail}" if too_large else f"cannot read the {what}: {detail}")


def read_regular(path: str, *, limit: int, what: str = "file") -> bytes:
    """The bytes of the regular file at ``path``, at most ``limit`` of them, or ``FileRefused``."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise FileRefused(path, what, str(exc.strerror or exc)) from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise FileRefused(path, what, "not a regular file")
        if info.st_size > limit:
            detail = f"holds {info.st_size} bytes, more than the {limit} allowed"
            raise FileRefused(path, what, detail, too_large=True)
        with os.fdopen(os.dup(fd), "rb") as stream:
            data = stream.read(limit + 1)
    except OSError as exc:
        raise FileRefused(path, what, str(exc.strerror or exc)) from None
    finally:
        os.close(fd)
    if len(data) > limit:  # grew since fstat
        raise FileRefused(path, what, f"holds more than the {limit} bytes allowed", too_large=True)
    return data
