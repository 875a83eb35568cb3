"""``fleetsched config``: the scheduler's configuration file, printed and checked.

``fleetsched config default`` prints the ``SchedulerConfiguration`` that means what the flags mean
by default (today's behaviour: the default profile with Karmada's plugins, every setting at its
flag's default); ``--plugins`` and ``--feature-gates`` print the file equivalent to those flags.
``fleetsched config validate FILE`` loads a file as ``scheduler --config`` does (including building
each profile's framework, so invalid plugin args are caught, and reading the files it names as
start-up reads them: each extender's TLS files and the estimators' caFile/certFile/keyFile) and
prints its profiles, or every problem found, one line each (exit status 2).
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from fleetsched.flags import WORKLOAD_AFFINITY, gate_enabled, merge_feature_gates, parse_feature_gates

if TYPE_CHECKING:
    from fleetsched.scheduler.config import SchedulerConfiguration

__all__ = ["add_arguments", "run"]

EXIT_BAD_INPUT = 2


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "config_command",
        metavar="ACTION",
        choices=("default", "validate"),
        help="default: print the default configuration (YAML); validate: check FILE and print its profiles",
    )
    parser.add_argument("file", metavar="FILE", nargs="?", help="the SchedulerConfiguration file (validate)")
    parser.add_argument(
        "--plugins",
        default="*",
        help="default: print the profile this Karmada --plugins selection means (default %(default)s)",
    )
    parser.add_argument(
        "--feature-gates",
        default="",
        help="Karmada's gates, as the scheduler gets them: default prints them as featureGates; "
        "WorkloadAffinity=true adds the workload (anti-)affinity filters to the defaults",
    )


def run(args: argparse.Namespace) -> int:
    from fleetsched.api.text import for_terminal
    from fleetsched.scheduler import config

    prog = f"fleetsched config {args.config_command}"
    try:
        gates = parse_feature_gates(args.feature_gates)
    except ValueError as exc:
        print(f"{prog}: --feature-gates: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    workload_affinity = gate_enabled(gates, WORKLOAD_AFFINITY)
    if args.config_command == "default":
        if args.file is not None:
            print(f"{prog}: takes no FILE", file=sys.stderr)
            return EXIT_BAD_INPUT
        try:
            profile = config.default_profile(args.plugins, workload_affinity=workload_affinity)
        except ValueError as exc:
            print(f"{prog}: --plugins: {exc}", file=sys.stderr)
            return EXIT_BAD_INPUT
        configuration = config.SchedulerConfiguration(profiles=(profile,), feature_gates=gates)
        sys.stdout.write(config.configuration_to_yaml(configuration, workload_affinity=workload_affinity))
        return 0
    if args.file is None:
        print(f"{prog}: FILE is required", file=sys.stderr)
        return EXIT_BAD_INPUT
    try:
        loaded = config.load_configuration(args.file, workload_affinity=workload_affinity)
    except config.ConfigError as exc:
        for line in exc.lines():  # every problem, not the first one and a count
            print(f"{prog}: {line}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except config.PluginLoadError as exc:
        print(f"{prog}: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    try:
        gates = merge_feature_gates(gates, loaded.configuration.feature_gates, source=args.file)
    except ValueError as exc:
        print(f"{prog}: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    workload_affinity = gate_enabled(gates, WORKLOAD_AFFINITY)
    # As the scheduler does at start-up: build each profile's framework (plugin args, methods).
    from fleetsched.scheduler.pipeline import Settings
    from fleetsched.scheduler.profiles import ProfileError, profile_schedulers

    try:
        profile_schedulers(
            loaded.configuration.profiles,
            Settings(workload_affinity=workload_affinity),
            out_of_tree=loaded.out_of_tree,
        )
    except ProfileError as exc:
        from fleetsched.scheduler.config.load import unknown_arg_message

        located = unknown_arg_message(exc, loaded)
        print(f"{prog}: {located}" if located else f"{prog}: {args.file}: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    problems = _file_problems(loaded.configuration)
    for problem in problems:
        print(for_terminal(f"{prog}: {args.file}: {problem}"), file=sys.stderr)
    if problems:
        return EXIT_BAD_INPUT
    for profile in loaded.configuration.profiles:
        points = ", ".join(
            f"{point.value}=" + "+".join(
                e.name + (f"*{e.weight}" if point is config.ExtensionPoint.SCORE else "") for e in entries
            )
            for point, entries in profile.plugins.items()
        )
        print(for_terminal(f"profile {profile.scheduler_name}: {points}", limit=65536))
    return 0


def _file_problems(configuration: SchedulerConfiguration) -> list[str]:
    """What start-up would refuse in the files the configuration names: each extender's TLS files
    (read, bounded, and loaded as the extender client loads them) and, when the estimators are
    enabled, their caFile, certFile and keyFile (regular files of bounded size)."""
    from fleetsched.api.yamlload import LoadError, read_regular_file

    problems: list[str] = []
    configs = {c.url_prefix: c for p in configuration.profiles for c in p.extenders}
    if configs:
        from fleetsched.extender.client import ExtenderConfigError, check_extender

        for config in configs.values():
            try:
                check_extender(config)
            except ExtenderConfigError as exc:
                problems.append(str(exc))
    estimator = configuration.estimator
    if estimator.enabled:
        from fleetsched.extender.client import MAX_PEM_BYTES  # the estimator client's limit too

        for field, path in (("caFile", estimator.ca_file), ("certFile", estimator.cert_file),
                            ("keyFile", estimator.key_file)):
            if not path:
                continue
            try:
                read_regular_file(path, limit=MAX_PEM_BYTES)
            except LoadError as exc:
                why = exc.reason.removeprefix("cannot read the file: ")
                problems.append(f"estimator.{field}: cannot read {path}: {why}")
    return problems
