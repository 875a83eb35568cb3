"""Quantities behave as Kubernetes' resource.Quantity: exact, nano-precise, rounded away from zero."""

from __future__ import annotations

from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fleetsched.api.quantity import (
    MAX_QUANTITY_LENGTH,
    Format,
    Quantity,
    QuantityError,
    QuantityTooLong,
    parse_quantity,
)


@pytest.mark.parametrize(
    ("text", "exact", "fmt"),
    [
        pytest.param("100m", Fraction(1, 10), Format.DECIMAL_SI, id="milli"),
        pytest.param("1Gi", Fraction(2**30), Format.BINARY_SI, id="binary suffix"),
        pytest.param("1e3", Fraction(1000), Format.DECIMAL_EXPONENT, id="exponent"),
        pytest.param("0.5", Fraction(1, 2), Format.DECIMAL_SI, id="plain fraction"),
        pytest.param(".5", Fraction(1, 2), Format.DECIMAL_SI, id="leading dot"),
        pytest.param("5.", Fraction(5), Format.DECIMAL_SI, id="trailing dot"),
        pytest.param("1E", Fraction(10**18), Format.DECIMAL_SI, id="exa, not an exponent"),
        pytest.param("-2", Fraction(-2), Format.DECIMAL_SI, id="negative"),
        pytest.param("0.0000000001", Fraction(1, 10**9), Format.DECIMAL_SI, id="sub-nano rounds up"),
        pytest.param("-0.0000000001", Fraction(-1, 10**9), Format.DECIMAL_SI, id="sub-nano, negative"),
        pytest.param("1e-12", Fraction(1, 10**9), Format.DECIMAL_EXPONENT, id="tiny exponent rounds up"),
        pytest.param(3, Fraction(3), Format.DECIMAL_SI, id="YAML integer"),
        pytest.param(1.5, Fraction(3, 2), Format.DECIMAL_SI, id="YAML float"),
    ],
)
def test_parse_is_exact(text: str | int | float, exact: Fraction, fmt: Format) -> None:
    q = parse_quantity(text)
    assert q.value_exact == exact
    assert q.format is fmt


@pytest.mark.parametrize(
    ("text", "value", "milli"),
    [
        pytest.param("0.1m", 1, 1, id="0.1m counts as one millicore"),
        pytest.param("0.5", 1, 500, id="half a byte counts as one"),
        pytest.param("1500m", 2, 1500, id="value rounds up"),
        pytest.param("-0.5", -1, -500, id="negatives round away from zero"),
        pytest.param("-1.5m", -1, -2, id="negative milli rounds away from zero"),
    ],
)
def test_integer_views_round_away_from_zero(text: str, value: int, milli: int) -> None:
    q = parse_quantity(text)
    assert (q.value(), q.milli_value()) == (value, milli)


@pytest.mark.parametrize(
    ("text", "canonical"),
    [
        ("0.5", "500m"),
        ("1024Ki", "1Mi"),
        ("1500Ki", "1500Ki"),
        ("1000", "1k"),
        ("1500", "1500"),
        ("0.1m", "100u"),
        ("512", "512"),
        ("0", "0"),
        ("1e3", "1e3"),
    ],
)
def test_canonical_text(text: str, canonical: str) -> None:
    assert str(parse_quantity(text)) == canonical


@pytest.mark.parametrize("text", ["", " 1", "1 ", "1.2.3", "Gi", "1Gb", "1ee3", "abc", True, None, [1]])
def test_rejects_what_kubernetes_rejects(text: object) -> None:
    with pytest.raises(QuantityError):
        parse_quantity(text)  # type: ignore[arg-type]


def test_sum_keeps_left_format_unless_left_is_zero() -> None:
    binary, decimal = parse_quantity("1Ki"), parse_quantity("1k")
    assert (binary + decimal).format is Format.BINARY_SI
    assert (Quantity(0) + binary).format is Format.BINARY_SI


SUFFIXES = st.sampled_from(["n", "u", "m", "", "k", "Ki", "Mi"])


@given(st.integers(min_value=-(10**15), max_value=10**15), SUFFIXES)
def test_canonical_text_round_trips(number: int, suffix: str) -> None:
    q = parse_quantity(f"{number}{suffix}")
    assert parse_quantity(str(q)) == q


def test_a_binary_amount_below_one_is_decimal() -> None:
    q = parse_quantity("0.5Ki")
    assert (q.value_exact, q.format) == (Fraction(512), Format.BINARY_SI)
    small = parse_quantity("0.0001Ki")
    assert small.format is Format.DECIMAL_SI
    assert small.value_exact == Fraction(1024, 10**4)


def test_a_huge_exponent_is_refused_quickly() -> None:
    with pytest.raises(QuantityError, match="exponent out of range"):
        parse_quantity("1e999999999")
    assert parse_quantity("1e18").value() == 10**18


@settings(max_examples=400, deadline=None)
@given(
    whole=st.integers(min_value=0, max_value=10**32),
    fraction=st.none() | st.text("0123456789", min_size=0, max_size=14),
    suffix=st.sampled_from(["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei", *"numkMGTPE"]),
)
def test_the_fast_path_agrees_with_the_general_parser(whole: int, fraction: str | None, suffix: str) -> None:
    from fleetsched.api import quantity

    text = str(whole) + ("" if fraction is None else "." + fraction) + suffix
    fast, general = parse_quantity(text), quantity._parse_general(text)
    assert (fast.value_exact, fast.format) == (general.value_exact, general.format)
    assert type(fast.value_exact) is type(general.value_exact) and str(fast) == str(general)


@pytest.mark.parametrize("text", [
    pytest.param("9" * 5000, id="5,000 digits"),
    pytest.param("0." + "1" * 4999, id="5,000 fraction digits"),
    pytest.param("1e" + "0" * 4998 + "1", id="5,000-digit exponent"),
])
def test_text_longer_than_any_amount_is_refused_before_its_digits_are_read(text: str) -> None:
    # Python's int() refuses more than 4,300 digits with a bare ValueError, which was the failure.
    with pytest.raises(QuantityTooLong, match=rf"^quantity is {len(text)} characters long, more than 1000$"):
        parse_quantity(text)


def test_the_longest_accepted_text_is_read_exactly() -> None:
    assert parse_quantity("0" * (MAX_QUANTITY_LENGTH - 1) + "7").value_exact == 7
    with pytest.raises(QuantityTooLong):
        parse_quantity("0" * MAX_QUANTITY_LENGTH + "7")


def test_a_cluster_with_a_too_long_quantity_names_the_field() -> None:
    from fleetsched.scheduler.convert import ConversionError, cluster_from_dict

    cluster = {"apiVersion": "cluster.karmada.io/v1alpha1", "kind": "Cluster", "metadata": {"name": "m"},
               "spec": {}, "status": {"resourceSummary": {"allocatable": {"pods": "9" * 5000}}}}
    with pytest.raises(ConversionError) as refused:
        cluster_from_dict(cluster)
    assert str(refused.value) == ("status.resourceSummary.allocatable.pods: "
                                  "quantity is 5000 characters long, more than 1000")
