"""Bind-address flags read the same way by every long-running command."""

from __future__ import annotations

import pytest

from fleetsched.controller import http
from fleetsched.estimator import server_cmd as estimator_cmd
from fleetsched.flags import parse_bind_address
from fleetsched.webhook import server_cmd as webhook_cmd


@pytest.mark.parametrize(
    ("text", "expected"),
    [(":8080", ("0.0.0.0", 8080)), ("127.0.0.1:9", ("127.0.0.1", 9)), ("[::1]:9", ("::1", 9)), ("0", None)],
)
def test_bind_address(text: str, expected: tuple[str, int] | None) -> None:
    assert parse_bind_address(text) == expected


@pytest.mark.parametrize("text", ["localhost", "host:", ":http"])
def test_a_bad_bind_address_names_the_value(text: str) -> None:
    with pytest.raises(ValueError, match=repr(text)):
        parse_bind_address(text)


def test_every_command_uses_the_one_parser() -> None:
    assert http.split_address is webhook_cmd.parse_bind_address is estimator_cmd.parse_bind_address
