"""Command-line pieces ``fleetsched scheduler`` and ``fleetsched controller`` share.

Flag value types as Karmada's flags take them (Go durations, ``--flag``/``--flag=false``
booleans), the common flags (API QPS/burst, leader election, metrics and probe addresses, log
level), the Lease configuration from them, and the process lifecycle: JSON logs, SIGTERM/SIGINT
setting a stop event, Ctrl-C exiting 0.
"""

from __future__ import annotations

import argparse
import asyncio
import signal
import socket
import uuid
from collections.abc import Callable, Coroutine
from typing import Any

import structlog
import uvloop

from fleetsched.controller.runtime import controller as runtime
from fleetsched.controller.runtime import metrics
from fleetsched.controller.runtime.leader import LeaderElectionConfig
from fleetsched.controller.runtime.shard import SHARD_MODES, ShardConfig
from fleetsched.flags import parse_feature_gates
from fleetsched.kube import auth, logs
from fleetsched.kube.client import Connection, KubeClient


def duration(text: str) -> float:
    """Go-style durations as Karmada's flags use (``3s``, ``500ms``, ``1m``); bare numbers are seconds."""
    units = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}
    for suffix in ("ms", "s", "m", "h"):
        if text.endswith(suffix):
            try:
                return float(text[: -len(suffix)]) * units[suffix]
            except ValueError:
                break
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid duration {text!r} (use e.g. 3s, 500ms)") from None


def non_negative_duration(text: str) -> float:
    """A ``duration`` that may be 0 (meaning "none") but not negative."""
    value = duration(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"invalid duration {text!r} (must be 0 or more)")
    return value


def positive_duration(text: str) -> float:
    """A ``duration`` above 0."""
    value = duration(text)
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"invalid duration {text!r} (must be more than 0)")
    return value


def feature_gates(text: str) -> dict[str, bool]:
    """argparse type of ``--feature-gates``: Karmada's gates, as Kubernetes parses them."""
    try:
        return parse_feature_gates(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def boolean(text: str) -> bool:
    lowered = text.lower()
    if lowered in ("true", "1", "yes"):
        return True
    if lowered in ("false", "0", "no"):
        return False
    raise argparse.ArgumentTypeError(f"invalid boolean {text!r} (use true or false)")


def add_boolean(
    parser: argparse.ArgumentParser, flag: str, *, default: bool, help: str | None = None
) -> None:
    """A Go-style boolean flag: ``--flag`` alone means true, ``--flag=false`` turns it off."""
    parser.add_argument(flag, type=boolean, nargs="?", const=True, default=default, help=help)


def add_kube_api_arguments(parser: argparse.ArgumentParser, *, qps: float, burst: int) -> None:
    parser.add_argument(
        "--kube-api-qps",
        type=float,
        default=qps,
        help="client-side QPS limit for API writes; 0 disables (default %(default)s)",
    )
    parser.add_argument(
        "--kube-api-burst", type=int, default=burst, help="burst for --kube-api-qps (default %(default)s)"
    )


def add_leader_election_arguments(parser: argparse.ArgumentParser, *, resource_name: str) -> None:
    add_boolean(
        parser, "--leader-elect", default=True,
        help="use a coordination.k8s.io Lease so only one replica is active (default true)",
    )
    parser.add_argument("--leader-elect-resource-name", default=resource_name)
    parser.add_argument("--leader-elect-resource-namespace", default="karmada-system")
    parser.add_argument("--leader-elect-lease-duration", type=duration, default=15.0)
    parser.add_argument("--leader-elect-renew-deadline", type=duration, default=10.0)
    parser.add_argument("--leader-elect-retry-period", type=duration, default=2.0)
    parser.add_argument(
        "--shard-mode",
        choices=SHARD_MODES,
        default="none",
        help="none: one elected leader works, the others stand by; lease: every replica holds a member "
        "Lease named <resource-name>-<identity> in --leader-elect-resource-namespace and works on "
        "its share of the objects (the --leader-elect-* timings apply to it; the leader Lease is "
        "not used) (default %(default)s)",
    )
    parser.add_argument(
        "--shard-identity",
        metavar="NAME",
        default=None,
        help="this replica's name in the shard group (--shard-mode=lease); default: the host name, "
        "i.e. the pod name",
    )


def add_serving_arguments(parser: argparse.ArgumentParser, *, metrics: str, health: str) -> None:
    """Metrics and probe addresses, then the log level."""
    parser.add_argument("--metrics-bind-address", default=metrics, help="'0' disables (default %(default)s)")
    parser.add_argument(
        "--health-probe-bind-address", default=health, help="'0' disables (default %(default)s)"
    )
    parser.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"])


def leader_election(args: argparse.Namespace) -> LeaderElectionConfig | None:
    """The Lease settings from the leader election flags; None with ``--leader-elect=false`` or
    ``--shard-mode=lease`` (the member Leases replace the leader's)."""
    if not args.leader_elect or getattr(args, "shard_mode", "none") == "lease":
        return None
    return LeaderElectionConfig(
        name=args.leader_elect_resource_name,
        namespace=args.leader_elect_resource_namespace,
        identity=f"{socket.gethostname()}_{uuid.uuid4()}",
        lease_duration=args.leader_elect_lease_duration,
        renew_deadline=args.leader_elect_renew_deadline,
        retry_period=args.leader_elect_retry_period,
    )


def sharding(args: argparse.Namespace) -> ShardConfig | None:
    """The member Lease settings with ``--shard-mode=lease`` (None otherwise); ValueError (one
    line) for a group name or timings a member Lease cannot have."""
    if getattr(args, "shard_mode", "none") != "lease":
        return None
    return ShardConfig.of(
        args.leader_elect_resource_name,
        args.leader_elect_resource_namespace,
        args.shard_identity or socket.gethostname(),
        lease_duration=args.leader_elect_lease_duration,
        renew_deadline=args.leader_elect_renew_deadline,
        retry_period=args.leader_elect_retry_period,
    )


def field_manager(args: argparse.Namespace, *, agent: str) -> str:
    """``agent``, or ``<agent>/<member name>`` in sharded mode, so managedFields and the audit
    log name the replica that wrote."""
    shard = sharding(args)
    return agent if shard is None else f"{agent}/{shard.member}"


def kube_client(connection: Connection, args: argparse.Namespace, *, agent: str) -> KubeClient:
    """The API client for writes, limited by ``--kube-api-qps``/``--kube-api-burst``; its writes'
    ``fieldManager`` is ``field_manager(args)``; its requests are counted in ``rest_client_*``."""
    client = KubeClient(
        connection,
        qps=args.kube_api_qps,
        burst=args.kube_api_burst,
        user_agent=agent,
        field_manager=field_manager(args, agent=agent),
    )
    client.observe_request = metrics.observe_request
    return client


def stop_on_signals() -> asyncio.Event:
    """An event set by SIGTERM or SIGINT (call inside the running loop)."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    return stop


def run_command(
    serve: Callable[[argparse.Namespace], Coroutine[Any, Any, int]], args: argparse.Namespace
) -> int:
    logs.configure(args.log_level)
    runtime.enable_gc_tuning()
    try:
        # uvloop: the operators are event-loop bound (thousands of watch events, requests and tasks
        # a second); libuv's loop costs a fraction of asyncio's own per callback and per socket read.
        with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
            return runner.run(serve(args))
    except KeyboardInterrupt:
        return 0
    except auth.KubeconfigError as exc:  # no kubeconfig, no pod environment, unusable files
        structlog.get_logger("fleetsched.controller").error("invalid_flag", flag="--kubeconfig",
                                                            error=str(exc))
        return 2
