"""The one command line of fleetsched: ``fleetsched <command>``.

Each command lives in its own module exposing ``add_arguments(parser)`` and ``run(args) -> int``.
Modules are imported lazily so that ``fleetsched simulate`` does not pay for kopf or grpc.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from fleetsched import __version__

# command name -> (module, one-line help)
COMMANDS: dict[str, tuple[str, str]] = {
    "simulate": ("fleetsched.simulate", "schedule bindings offline from YAML files and print the result"),
    "explain": (
        "fleetsched.live.explain_cmd",
        "explain a live binding: the per-cluster story of simulate --explain on the live state",
    ),
    "what-if": (
        "fleetsched.live.whatif_cmd",
        "lay changed policies, workloads or Clusters over the live state and show which bindings move "
        "(exit 3: one would become unschedulable)",
    ),
    "scheduler": (
        "fleetsched.controller.scheduler.command",
        "run the scheduler operator against a control plane",
    ),
    "descheduler": (
        "fleetsched.descheduler.command",
        "move replicas that stay unschedulable in a member cluster elsewhere (karmada-descheduler)",
    ),
    "controller": ("fleetsched.controller.policy.command", "run the policy controller that creates bindings"),
    "estimator": (
        "fleetsched.estimator.server_cmd",
        "serve the accurate replica estimator for one member cluster",
    ),
    "estimate": ("fleetsched.estimator.estimate_cmd", "answer estimator requests offline from YAML files"),
    "webhook": ("fleetsched.webhook.server_cmd", "serve the admission webhook for propagation policies"),
    "config": ("fleetsched.config_cmd", "print the default scheduler configuration, or check a file"),
}


def build_parser(argv: Sequence[str]) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="fleetsched", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action="version", version=f"fleetsched {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    wanted = next((a for a in argv if not a.startswith("-")), None)
    for name, (module_name, help_text) in COMMANDS.items():
        command_parser = sub.add_parser(name, help=help_text, description=help_text)
        # Only the module of the command being run is imported; the others only show their help line.
        if name == wanted:
            module = importlib.import_module(module_name)
            module.add_arguments(command_parser)
            command_parser.set_defaults(_run=module.run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(args_list)
    args = parser.parse_args(args_list)
    return int(args._run(args))
