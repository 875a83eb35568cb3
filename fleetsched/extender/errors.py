"""The one error type an extender call raises, and the four ways an extender can fail.

Pure: no I/O. The client (``client.py``) classifies transport faults into these kinds; the protocol
decoder (``protocol.py``) raises ``MALFORMED`` ones; the framework runtime decides whether a failure
skips the extender (``ignorable``) or fails the binding.
"""

from __future__ import annotations

import enum

from fleetsched.scheduler.framework.interface import ExtenderError as CoreExtenderError

__all__ = ["ExtenderError", "FaultKind"]


class FaultKind(enum.StrEnum):
    """Why an extender call failed; also the ``result`` label of the call-duration metric."""

    UNREACHABLE = "unreachable"  # connection refused, DNS, TLS handshake, connection dropped
    SLOW = "slow"  # no complete answer within httpTimeout
    ERRORING = "erroring"  # HTTP status other than 200, or a non-empty ``error`` field
    MALFORMED = "malformed"  # not JSON, wrong shape or types, too large, names a non-candidate


class ExtenderError(CoreExtenderError):
    """One failed call to one extender. ``str()`` is a single line that names the extender.

    The core's ``ExtenderError`` (what the framework runtime's Extender Protocol raises); the runtime
    names the extender itself and shows ``kind`` and ``detail`` only, so a message names it once.

    ``extender`` is the extender's name (its ``urlPrefix``), ``verb`` the call (``filter`` or
    ``prioritize``), ``kind`` the fault, ``detail`` what was seen.
    """

    def __init__(self, extender: str, verb: str, kind: FaultKind, detail: str) -> None:
        self.extender = extender
        self.verb = verb
        self.kind = kind
        self.detail = " ".join(detail.split())  # one line, whatever the server or the OS said
        super().__init__(f"extender {extender} {verb} failed ({kind}): {self.detail}")

    def __reduce__(self) -> tuple[type[ExtenderError], tuple[str, str, FaultKind, str]]:
        return (ExtenderError, (self.extender, self.verb, self.kind, self.detail))
