"""Text made fit to show (``fleetsched.api.text``): escaped for a terminal, and cut to an API field's
limit at a reason boundary with a count of what was left out. Invariants by hypothesis."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fleetsched.api.text import (
    ANNOTATIONS_LIMIT,
    CONDITION_MESSAGE_LIMIT,
    EVENT_MESSAGE_LIMIT,
    annotations_size,
    escape_controls,
    fit_message,
    for_terminal,
)

PROPERTIES = settings(derandomize=True, max_examples=300, deadline=None)
CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u200e\u200f\u202a-\u202e\u2066-\u2069]")
COUNT = re.compile(r"… and (\d+) more reasons?$")

reason_text = st.text(
    alphabet=st.sampled_from(["a", "é", "中", "😀", " ", "{", ":", "\x1b", "\n", "\u202e", ","]), max_size=40
)


def a_message(reasons: list[str]) -> str:
    return "0/9 clusters are available: " + ", ".join(reasons) + "."


def test_the_limits_are_the_apis() -> None:
    assert (CONDITION_MESSAGE_LIMIT, EVENT_MESSAGE_LIMIT, ANNOTATIONS_LIMIT) == (32768, 1024, 262144)


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        pytest.param("\x1b[2J", "\\x1b[2J", id="clear screen"),
        pytest.param("a\nb\rc\td", "a\\x0ab\\x0dc\\x09d", id="line breaks and tab"),
        pytest.param("\u202eabc", "\\u202eabc", id="right-to-left override"),
        pytest.param("\x9b31m", "\\x9b31m", id="C1 CSI"),
        pytest.param("plain text, é 中", "plain text, é 中", id="unchanged"),
    ],
)
def test_controls_are_escaped(text: str, shown: str) -> None:
    assert escape_controls(text) == shown == for_terminal(text)


def test_a_long_line_is_capped_with_a_count() -> None:
    assert for_terminal("x" * 10, limit=4) == "xxxx… (6 more characters)"
    assert for_terminal("xx\x1b" * 3, limit=4) == "xx… (16 more characters)"  # no half escape


def test_a_message_is_cut_at_a_reason_boundary() -> None:
    reasons = [f"1 cluster(s) had untolerated taint {{key-{i}=value:NoSchedule}}" for i in range(150)]
    message = a_message(reasons)
    cut = fit_message(message, 1024)
    assert len(cut.encode()) <= 1024
    kept = cut.removeprefix("0/9 clusters are available: ").split(", ")[:-1]
    assert kept == reasons[: len(kept)] and len(kept) > 10
    assert cut.endswith(f", … and {150 - len(kept)} more reasons")


def test_a_single_huge_reason_is_cut_inside() -> None:
    cut = fit_message("0/2 clusters are available: " + "y" * 100_000 + ", 1 other.", 200)
    assert len(cut.encode()) == 200
    assert cut.startswith("0/2 clusters are available: yyy") and cut.endswith("y… and 1 more reason")


@PROPERTIES
@given(reasons=st.lists(reason_text, max_size=60), limit=st.integers(0, 600))
def test_fit_message_invariants(reasons: list[str], limit: int) -> None:
    message = a_message(reasons)
    cut = fit_message(message, limit)
    assert len(cut.encode("utf-8", "surrogatepass")) <= limit
    assert CONTROL.search(cut) is None
    escaped = escape_controls(message)
    if len(escaped.encode()) <= limit:
        assert cut == escaped
        return
    assert cut != escaped
    count = COUNT.search(cut)
    if count is not None and cut[: count.start()].endswith(", "):
        # Cut at a boundary: whole parts kept, and the count says how many were left out.
        parts = escaped.split(", ")
        kept = cut[: count.start() - 2].split(", ")
        assert kept == parts[: len(kept)]
        assert len(kept) + int(count.group(1)) == len(parts)
    else:  # cut inside the first reason (or, for a tiny limit, a plain prefix)
        assert escaped.startswith(cut.split("…")[0])


@PROPERTIES
@given(text=st.text(max_size=300), limit=st.integers(1, 200))
def test_for_terminal_invariants(text: str, limit: int) -> None:
    shown = for_terminal(text, limit=limit)
    assert CONTROL.search(shown) is None
    assert "\n" not in shown
    if len(escape_controls(text)) <= limit:
        assert shown == escape_controls(text)
    else:
        head, _, rest = shown.rpartition("… (")
        assert len(head) <= limit and escape_controls(text).startswith(head)
        assert rest == f"{len(escape_controls(text)) - len(head)} more characters)"


def test_annotations_size_counts_keys_and_values_in_bytes() -> None:
    assert annotations_size({"a": "é", "bb": ""}) == 1 + 2 + 2
