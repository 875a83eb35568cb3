from __future__ import annotations

import pytest

from fleetsched.scheduler.config.durations import format_duration, parse_duration


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("5s", 5.0),
        ("500ms", 0.5),
        ("1m30s", 90.0),
        ("1.5h", 5400.0),
        ("0", 0.0),
        ("250us", 0.00025),
        ("2h3m4s", 7384.0),
    ],
)
def test_go_durations_parse(text: str, seconds: float) -> None:
    assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["5", "", "s", "5 s", "-1s", "5sec", "1m30"])
def test_what_go_refuses_is_refused(text: str) -> None:
    with pytest.raises(ValueError, match="must"):
        parse_duration(text)


@pytest.mark.parametrize("seconds", [15.0, 10.0, 2.0, 3.0, 0.5, 90.0, 3600.0, 3723.0, 0.0, 1.25])
def test_formatting_reads_back_to_the_same_value(seconds: float) -> None:
    assert parse_duration(format_duration(seconds)) == pytest.approx(seconds)


def test_formatting_is_the_short_go_form() -> None:
    assert [format_duration(s) for s in (15.0, 0.5, 90.0, 3600.0)] == ["15s", "500ms", "1m30s", "1h"]
