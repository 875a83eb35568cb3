"""What decoding a JSON body will cost in memory, known before it is decoded.

Python's JSON tree is many times larger than the text it comes from: ``{}`` is 3 bytes on the
wire and about 80 in memory, ``1.5`` is 4 bytes and about 110, and the webhook's Go-shaped copy
and per-value messages add more. A 7 MiB body could expand past 800 MB if it were parsed first
and measured afterwards. ``estimate`` counts the body's structural characters instead (a few
``bytes.count`` passes in C: no copy, no parse) and prices each container, value, string and
non-integer number at what CPython and the webhook allocate for it, rounded up. The server
refuses a body whose estimate is over its budget before a single object is built.

The counts include characters inside strings, so the estimate errs high (never low) for
strings full of punctuation. The prices were measured on CPython 3.11 for ``json.loads`` plus
``review.handle`` (the Go-shaped copy, the re-encoding, the rules' messages);
``tests/component/webhook/test_memory.py`` checks them against ``tracemalloc``.

Pure: no I/O, no logging.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Estimate", "estimate"]

# Bytes per item, upper bounds (CPython 3.11, 64-bit), the webhook's own work included: an object
# or array (the dict/list, its decoded copy and re-encoding), a value (its slot, or an int object,
# or a dict entry with its share of the table), a string object's header, a non-integer number (a
# GoFloat keeps its literal text).
CONTAINER = 600
VALUE = 112
STRING = 96
FLOAT = 64


@dataclass(frozen=True, slots=True)
class Estimate:
    """Upper bounds, in bytes, of the memory one decode takes."""

    body: int  # the raw bytes
    text: int  # the decoded str (1, 2 or 4 bytes per character, as CPython stores it)
    tree: int  # the parsed values and the work done on them, string contents included

    @property
    def peak(self) -> int:
        """The most held at once: bytes and text while decoding, then text and tree while
        parsing (the body is released once decoded, the text once parsed)."""
        return max(self.body + self.text, self.text + self.tree)


# Lead bytes of a character outside the BMP (0xF0-0xF4; the rest are invalid and become U+FFFD),
# and of one at U+0100 or above.
_FOUR_BYTE_LEADS = tuple(bytes([b]) for b in range(0xF0, 0x100))
_WIDE_LEADS = tuple(bytes([b]) for b in range(0xC4, 0xF0))
_ASCII = bytes(range(0x80))


def _char_width(body: bytes | bytearray) -> int:
    """Bytes per character of the str that ``body`` decodes to (an upper bound). Each step is a
    C call that takes milliseconds on 7 MiB (``max(body)`` would hold the GIL for a few hundred):
    the non-ASCII bytes are picked out, then searched for lead bytes (a one-byte search is a memchr)."""
    if body.isascii():
        return 1
    wide = body.translate(None, _ASCII)
    if any(lead in wide for lead in _FOUR_BYTE_LEADS):
        return 4
    return 2 if any(lead in wide for lead in _WIDE_LEADS) else 1


def estimate(body: bytes | bytearray) -> Estimate:
    """Price ``body`` as JSON without parsing it. Never raises; garbage gets a finite price."""
    width = _char_width(body)
    containers = body.count(b"{") + body.count(b"[")
    # Every value after the first in a container follows a comma.
    values = body.count(b",") + containers + 1
    strings = (body.count(b'"') + 1) // 2
    floats = body.count(b".")  # an exponent-only number (1e5) is priced as a value, which covers it
    text = len(body) * width
    tree = containers * CONTAINER + values * VALUE + strings * STRING + floats * FLOAT + text
    return Estimate(body=len(body), text=text, tree=tree)
