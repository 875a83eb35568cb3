"""Kubernetes resource quantities, parsed and compared exactly.

Owns the text form (``100m``, ``1Gi``, ``1e3``, ``0.5``), exact rational arithmetic, the two integer
views Karmada uses everywhere (``value()`` rounds up, ``milli_value()`` rounds ``x * 1000`` up) and
the canonical text Kubernetes prints. Floats are never used: ``0.1m`` must count as one millicore.
"""

from __future__ import annotations

import math
import re
from enum import StrEnum
from fractions import Fraction
from typing import Any

__all__ = ["MAX_QUANTITY_LENGTH", "Format", "Quantity", "QuantityError", "QuantityTooLong", "parse_quantity"]


class QuantityError(ValueError):
    """The text is not a Kubernetes quantity."""


class QuantityTooLong(QuantityError):
    """The text is longer than any amount needs (``MAX_QUANTITY_LENGTH``): refused before any digit is
    read, so no integer conversion sees it (Python refuses more than 4,300 digits with a bare
    ValueError, and exact arithmetic on such numbers costs the caller, not the sender)."""


class Format(StrEnum):
    DECIMAL_SI = "DecimalSI"
    BINARY_SI = "BinarySI"
    DECIMAL_EXPONENT = "DecimalExponent"


_BINARY = {"Ki": 1, "Mi": 2, "Gi": 3, "Ti": 4, "Pi": 5, "Ei": 6}
_DECIMAL = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_DECIMAL_SUFFIX = {exp: suffix for suffix, exp in _DECIMAL.items()}
_BINARY_SUFFIX = {power: suffix for suffix, power in _BINARY.items()}
_NANO = 10**9
_MAX_EXPONENT = 1000
# Characters of quantity text. Kubernetes has no such bound (it parses any length into an arbitrary-
# precision decimal), but every real amount fits in 40; 1,000 keeps every exact value below 10**2000.
MAX_QUANTITY_LENGTH = 1000

_PATTERN = re.compile(
    r"^(?P<sign>[+-]?)(?P<number>[0-9]+(?:\.[0-9]*)?|\.[0-9]+)"
    r"(?P<suffix>Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?[0-9]+)?$"
)


class Quantity:
    """An exact quantity: a rational value plus the format it was written in."""

    __slots__ = ("format", "value_exact")

    def __init__(self, value: Fraction | int, fmt: Format = Format.DECIMAL_SI) -> None:
        self.value_exact = Fraction(value)
        self.format = fmt

    @classmethod
    def parse(cls, text: str | int | float) -> Quantity:
        return parse_quantity(text)

    # The two integer views Karmada uses (resource.Quantity.Value / MilliValue): both round away
    # from zero, so a positive 0.1m is one millicore and -0.5 is -1.
    def value(self) -> int:
        return _round_away_from_zero(self.value_exact)

    def milli_value(self) -> int:
        return _round_away_from_zero(self.value_exact * 1000)

    def format_units(self) -> int:
        """Karmada's quantityAsInt64: decimal formats in milli-units, binary ones
        in whole units (a quirk kept for result compatibility: "2G" against "Ki" compares
        milli-bytes with bytes)."""
        return self.value() if self.format is Format.BINARY_SI else self.milli_value()

    def is_zero(self) -> bool:
        return self.value_exact == 0

    def __add__(self, other: Quantity) -> Quantity:
        return Quantity(self.value_exact + other.value_exact, self._sum_format(other))

    def __sub__(self, other: Quantity) -> Quantity:
        return Quantity(self.value_exact - other.value_exact, self._sum_format(other))

    def __mul__(self, factor: int) -> Quantity:
        return Quantity(self.value_exact * factor, self.format)

    def _sum_format(self, other: Quantity) -> Format:
        # Kubernetes keeps the left operand's format unless the left operand is zero.
        return other.format if self.is_zero() else self.format

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Quantity):
            return self.value_exact == other.value_exact
        return NotImplemented

    def __lt__(self, other: Quantity) -> bool:
        return self.value_exact < other.value_exact

    def __le__(self, other: Quantity) -> bool:
        return self.value_exact <= other.value_exact

    def __hash__(self) -> int:
        return hash(self.value_exact)

    def __repr__(self) -> str:
        return f"Quantity({str(self)!r})"

    def __str__(self) -> str:
        return format_canonical(self.value_exact, self.format)


# The spellings nearly every manifest uses ("250m", "1.5Gi", "4"): exact integer arithmetic, one
# Fraction. Anything else (signs, exponents, "1.", more than nano precision, long texts) takes the
# general path below, which this must agree with (a property test holds them equal).
_SIMPLE = re.compile(r"([0-9]{1,30})(?:\.([0-9]{1,12}))?(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE])?")


def _parse_simple(text: str) -> Quantity | None:
    match = _SIMPLE.fullmatch(text)
    if match is None:
        return None
    whole, fraction, suffix = match.groups()
    numerator = int(whole + fraction) if fraction else int(whole)
    denominator = 10 ** len(fraction) if fraction else 1
    fmt = Format.DECIMAL_SI
    if suffix in _BINARY:
        numerator *= 1024 ** _BINARY[suffix]
        fmt = Format.BINARY_SI
    else:
        exponent = _DECIMAL[suffix or ""]
        if exponent >= 0:
            numerator *= 10**exponent
        else:
            denominator *= 10**-exponent
    if (numerator * _NANO) % denominator:
        return None  # finer than nano units: the general path rounds
    if fmt is Format.BINARY_SI and 0 < numerator < denominator:
        fmt = Format.DECIMAL_SI
    quantity = Quantity.__new__(Quantity)
    quantity.value_exact = Fraction(numerator, denominator)
    quantity.format = fmt
    return quantity


def parse_quantity(text: str | int | float) -> Quantity:
    """Parse Kubernetes quantity text (YAML may also hand over a plain number). Raises
    ``QuantityError``; ``QuantityTooLong`` for text over ``MAX_QUANTITY_LENGTH`` characters."""
    if type(text) is str:
        check_length(text)
        simple = _parse_simple(text)
        if simple is not None:
            return simple
    return _parse_general(text)


def check_length(text: str) -> None:
    """Raise ``QuantityTooLong`` for text over ``MAX_QUANTITY_LENGTH`` characters."""
    if len(text) > MAX_QUANTITY_LENGTH:
        raise QuantityTooLong(f"quantity is {len(text)} characters long, more than {MAX_QUANTITY_LENGTH}")


def _parse_general(text: str | int | float) -> Quantity:
    if isinstance(text, bool):
        raise QuantityError(f"quantity must be a string or a number, not {text!r}")
    if isinstance(text, int):
        return Quantity(text, Format.DECIMAL_SI)
    if isinstance(text, float):
        if not math.isfinite(text):
            raise QuantityError(f"quantity {text!r} is not finite")
        # repr() is the shortest text that round-trips, so 0.1 means one tenth, not its binary neighbour.
        text = repr(text)
    if not isinstance(text, str):
        raise QuantityError(f"quantity must be a string or a number, not {type(text).__name__}")
    check_length(text)  # also for a float's repr and a str subclass
    match = _PATTERN.match(text)
    if match is None:
        raise QuantityError(f"quantities must match the regular expression "
                            f"'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$', got {text!r}")
    number = Fraction(match["number"]) if match["number"] != "." else None
    if number is None:
        raise QuantityError(f"invalid quantity {text!r}")
    if match["sign"] == "-":
        number = -number
    suffix = match["suffix"] or ""
    if suffix in _BINARY:
        value, fmt = number * 1024 ** _BINARY[suffix], Format.BINARY_SI
    elif suffix in _DECIMAL:
        value, fmt = number * Fraction(10) ** _DECIMAL[suffix], Format.DECIMAL_SI
    else:
        exponent = int(suffix[1:])
        if abs(exponent) > _MAX_EXPONENT:
            # Exact arithmetic on 10**999999999 would take minutes; no resource amount is that large.
            raise QuantityError(f"quantity {text!r} has an exponent out of range (at most ±{_MAX_EXPONENT})")
        value, fmt = number * Fraction(10) ** exponent, Format.DECIMAL_EXPONENT
    # Kubernetes keeps no precision finer than nano units: ParseQuantity rounds away from zero.
    if (value * _NANO).denominator != 1:
        value = Fraction(_round_away_from_zero(value * _NANO), _NANO)
    # A binary amount strictly between -1 and 1 has no binary spelling, so Kubernetes calls it decimal.
    if fmt is Format.BINARY_SI and 0 < abs(value) < 1:
        fmt = Format.DECIMAL_SI
    return Quantity(value, fmt)


def _round_away_from_zero(value: Fraction) -> int:
    return math.ceil(value) if value >= 0 else math.floor(value)


def format_canonical(value: Fraction, fmt: Format) -> str:
    """The text Kubernetes prints for a quantity (resource.Quantity.String)."""
    if value == 0:
        return "0"
    sign = "-" if value < 0 else ""
    magnitude = abs(value)
    if fmt is Format.BINARY_SI and magnitude.denominator == 1 and magnitude >= 1024:
        amount = magnitude.numerator
        power = 0
        while power < 6 and amount % 1024 == 0:
            amount //= 1024
            power += 1
        if power > 0:
            return f"{sign}{amount}{_BINARY_SUFFIX[power]}"
        return f"{sign}{amount}"
    # Decimal forms: round up to nano units, then use the largest exponent (a multiple of 3) that
    # keeps the mantissa whole.
    nanos = math.ceil(magnitude * 10**9)
    exponent = -9
    while exponent < 18 and nanos % 1000 == 0:
        nanos //= 1000
        exponent += 3
    if fmt is Format.DECIMAL_EXPONENT:
        return f"{sign}{nanos}" + (f"e{exponent}" if exponent else "")
    return f"{sign}{nanos}{_DECIMAL_SUFFIX[exponent]}"


def pydantic_quantity(value: Any) -> Quantity:
    """Validator used by the API models: accept text or numbers, keep the parsed Quantity."""
    if isinstance(value, Quantity):
        return value
    return parse_quantity(value)
