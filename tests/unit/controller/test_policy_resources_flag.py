"""``fleetsched controller --resources``: the default leaves out Secrets and RBAC kinds; ``*``,
``-NAME`` and repeated flags let an overlay add kinds without restating the defaults."""

from __future__ import annotations

import pytest

from fleetsched import cli
from fleetsched.controller.policy.operator import (
    DEFAULT_RESOURCES,
    KNOWN_RESOURCES,
    OPT_IN_RESOURCES,
    RBAC_RESOURCES,
)

RBAC = tuple(RBAC_RESOURCES)


def resources(*flags: str) -> tuple[str, ...]:
    argv = ["controller", *flags]
    return tuple(cli.build_parser(argv).parse_args(argv).resources)


def test_the_default_leaves_out_pods_secrets_and_rbac_kinds() -> None:
    assert resources() == DEFAULT_RESOURCES
    assert set(OPT_IN_RESOURCES) == {"pods", "secrets", *RBAC}
    assert not set(OPT_IN_RESOURCES) & set(DEFAULT_RESOURCES)
    assert set(DEFAULT_RESOURCES) | set(OPT_IN_RESOURCES) == set(KNOWN_RESOURCES)
    assert {"deployments.apps", "configmaps", "services"} <= set(DEFAULT_RESOURCES)


def test_help_says_what_the_default_leaves_out_and_why() -> None:
    parser = cli.build_parser(["controller"])
    controller = parser._subparsers._group_actions[0].choices["controller"]  # type: ignore[union-attr]
    (text,) = [a.help for a in controller._actions if a.dest == "resources"]
    assert text is not None
    for words in ("secrets", "clusterroles", "'escalate' and 'bind'", "manifests/overlays/propagate-secrets"):
        assert words in text


@pytest.mark.parametrize(("flags", "expected"), [
    pytest.param(("--resources=configmaps",), ("configmaps",), id="a list replaces the default"),
    pytest.param(("--resources=*,secrets",), (*DEFAULT_RESOURCES, "secrets"), id="star is the default"),
    pytest.param(("--resources=*,-configmaps",), tuple(n for n in DEFAULT_RESOURCES if n != "configmaps"),
                 id="minus leaves one out"),
    pytest.param(("--resources=*,secrets", f"--resources=*,{','.join(RBAC)}"),
                 (*DEFAULT_RESOURCES, "secrets", *RBAC), id="repeated flags add up"),
    pytest.param(("--resources=secrets", "--resources=-*,configmaps"), ("configmaps", "secrets"),
                 id="a later minus-star takes the defaults out again"),
])
def test_resources_terms(flags: tuple[str, ...], expected: tuple[str, ...]) -> None:
    order = list(KNOWN_RESOURCES)
    assert resources(*flags) == tuple(sorted(expected, key=order.index))


@pytest.mark.parametrize(("flag", "message"), [
    ("--resources=deployments,-widgets.example.io", "unknown deployments, -widgets.example.io (known: *,"),
    ("--resources=", "no resource kind left to watch"),
    ("--resources=-*", "no resource kind left to watch"),
])
def test_bad_resources_are_one_line_naming_the_flag(flag: str, message: str,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        resources(flag)
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err.startswith("fleetsched controller: error: argument --resources: ") and message in err
