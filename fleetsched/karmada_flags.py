"""Flags Karmada's chart passes to its scheduler, estimator and webhook, accepted by fleetsched's.

A values file written for Karmada's chart (``--v=4``, ``--master``, ``--enable-pprof``,
``--profiling-bind-address``, ``--rate-limiter-*``) must not make a fleetsched command exit 2.
Each flag says in ``--help`` what it does here: ``--master`` overrides the kubeconfig's server as
client-go's does; the others mean nothing in this process and are ignored. None changes a
scheduling result. Parsing only, and one pure helper for ``--master``.
"""

from __future__ import annotations

import argparse
import dataclasses

from fleetsched.kube.client import Connection

__all__ = ["ALL", "add_arguments", "with_master"]

# The flag families; a command that already has one of them leaves it out of ``flags``.
ALL: tuple[str, ...] = ("--v", "--master", "--enable-pprof", "--profiling-bind-address", "--rate-limiter")

_BY_CLIENT = "accepted and ignored: --kube-api-qps/--kube-api-burst limit the API calls here"
_BY_QUEUE = "accepted and ignored: the work queue here has its own per-item backoff"
_RATE_LIMITER: tuple[tuple[str, type, object, str], ...] = (
    ("--rate-limiter-qps", int, 10, f"Karmada's work-queue QPS; {_BY_CLIENT}"),
    ("--rate-limiter-bucket-size", int, 100, f"Karmada's work-queue token bucket; {_BY_CLIENT}"),
    ("--rate-limiter-base-delay", str, "5ms", f"Karmada's per-item retry base delay; {_BY_QUEUE}"),
    ("--rate-limiter-max-delay", str, "1000s", f"Karmada's per-item retry maximum delay; {_BY_QUEUE}"),
)


def _go_boolean(text: str) -> bool:
    value = text.strip().lower()
    if value in {"1", "t", "true"}:
        return True
    if value in {"0", "f", "false"}:
        return False
    raise argparse.ArgumentTypeError(f"{text!r} is not a boolean (true or false)")


def add_arguments(parser: argparse.ArgumentParser, *, flags: tuple[str, ...] = ALL) -> None:
    """Add Karmada's flags named in ``flags`` (families: ``--rate-limiter`` adds all four)."""
    group = parser.add_argument_group("accepted for compatibility with Karmada's flags")
    if "--v" in flags:
        group.add_argument("--v", metavar="LEVEL", type=int, default=0,
                           help="klog verbosity; accepted and ignored: --log-level sets the level here")
    if "--master" in flags:
        group.add_argument("--master", metavar="URL", default="",
                           help="API server address; overrides the kubeconfig's server (its credentials "
                                "are kept)")
    if "--enable-pprof" in flags:
        group.add_argument("--enable-pprof", type=_go_boolean, nargs="?", const=True, default=False,
                           help="Go's pprof endpoint; accepted and ignored (none in a Python process)")
    if "--profiling-bind-address" in flags:
        group.add_argument("--profiling-bind-address", metavar="ADDRESS", default=":6060",
                           help="address of Go's pprof endpoint; accepted and ignored")
    if "--rate-limiter" in flags:
        for flag, kind, default, text in _RATE_LIMITER:
            group.add_argument(flag, metavar=kind.__name__.upper(), type=kind, default=default, help=text)


def with_master(connection: Connection, args: argparse.Namespace) -> Connection:
    """``connection`` with ``--master`` as its server when given, as client-go's
    BuildConfigFromFlags does: the kubeconfig's credentials and CA are kept."""
    master: str = getattr(args, "master", "") or ""
    return dataclasses.replace(connection, server=master.rstrip("/")) if master else connection
