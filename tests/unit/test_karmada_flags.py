"""Karmada's chart flags (--v, --master, --enable-pprof, --profiling-bind-address, --rate-limiter-*)
are accepted by every command that Karmada's chart would run, and say in --help what they do here."""

from __future__ import annotations

import argparse
from collections.abc import Callable

import pytest

from fleetsched import karmada_flags
from fleetsched.controller.policy import command as policy_cmd
from fleetsched.controller.scheduler import command as scheduler_cmd
from fleetsched.descheduler import command as descheduler_cmd
from fleetsched.estimator import server_cmd as estimator_cmd
from fleetsched.kube.client import Connection
from fleetsched.webhook import server_cmd as webhook_cmd

AddArguments = Callable[[argparse.ArgumentParser], None]

# What Karmada's chart and its docs pass to each component (chart values, `--v=4` everywhere).
SCHEDULER_LIKE = [
    "--v=4", "--master=https://karmada-apiserver.karmada-system.svc:5443", "--enable-pprof",
    "--profiling-bind-address=:6060", "--rate-limiter-qps=50", "--rate-limiter-bucket-size=500",
    "--rate-limiter-base-delay=5ms", "--rate-limiter-max-delay=1000s",
]
COMMANDS: list[tuple[str, AddArguments, list[str]]] = [
    ("scheduler", scheduler_cmd.add_arguments, SCHEDULER_LIKE),
    ("controller", policy_cmd.add_arguments, SCHEDULER_LIKE),
    ("estimator", estimator_cmd.add_arguments, [*SCHEDULER_LIKE, "--enable-pprof=true", "--cluster-name=m1"]),
    # karmada-descheduler takes --v, --master and the profiling flags; no work-queue rate limiter
    ("descheduler", descheduler_cmd.add_arguments,
     ["--v=4", "--master=https://karmada-apiserver.karmada-system.svc:5443", "--enable-pprof",
      "--profiling-bind-address=:6060"]),
    ("webhook", webhook_cmd.add_arguments,
     ["--v=4", "--enable-pprof=true", "--profiling-bind-address=:6061"]),
]


def _parser(add_arguments: AddArguments) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="fleetsched", exit_on_error=False)
    add_arguments(parser)
    return parser


@pytest.mark.parametrize(("name", "add_arguments", "argv"), COMMANDS, ids=[c[0] for c in COMMANDS])
def test_every_command_accepts_karmadas_chart_flags(
    name: str, add_arguments: AddArguments, argv: list[str],
) -> None:
    args = _parser(add_arguments).parse_args(argv)
    assert args.v == 4
    assert args.enable_pprof is True
    assert args.profiling_bind_address.startswith(":606")


@pytest.mark.parametrize(("name", "add_arguments", "argv"), COMMANDS, ids=[c[0] for c in COMMANDS])
def test_the_ignored_flags_say_so_in_help(name: str, add_arguments: AddArguments, argv: list[str]) -> None:
    parser = _parser(add_arguments)
    no_ops = {"--v", "--enable-pprof", "--profiling-bind-address", "--rate-limiter-qps",
              "--rate-limiter-bucket-size"}
    ignored = [a for a in parser._actions if set(a.option_strings) & no_ops]
    assert ignored, name
    for action in ignored:
        assert "ignored" in (action.help or ""), action.option_strings


def test_master_overrides_the_kubeconfig_server_and_keeps_its_credentials() -> None:
    parser = _parser(scheduler_cmd.add_arguments)
    loaded = Connection(server="https://from-kubeconfig:6443", ca_path="/ca.crt", token="secret")
    args = parser.parse_args(["--master=https://karmada-apiserver:5443/"])
    moved = karmada_flags.with_master(loaded, args)
    assert moved.server == "https://karmada-apiserver:5443"
    assert (moved.ca_path, moved.token) == ("/ca.crt", "secret")
    assert karmada_flags.with_master(loaded, parser.parse_args([])) == loaded


def test_a_bad_boolean_names_the_flag(capsys: pytest.CaptureFixture[str]) -> None:
    parser = argparse.ArgumentParser(prog="fleetsched scheduler")
    scheduler_cmd.add_arguments(parser)
    with pytest.raises(SystemExit) as exit_:
        parser.parse_args(["--enable-pprof=maybe"])
    assert exit_.value.code == 2
    assert "--enable-pprof" in capsys.readouterr().err


def test_the_estimator_keeps_its_own_master_flag() -> None:
    args = _parser(estimator_cmd.add_arguments).parse_args(["--cluster-name=m1", "--master=https://m1:6443"])
    assert args.master == "https://m1:6443"
