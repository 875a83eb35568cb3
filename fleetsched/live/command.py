"""``fleetsched explain`` and ``fleetsched what-if``: their flags and runs. Each reads the live state
(``state``), runs simulate on it in this process (``run``) and prints; nothing is written to the API
server. Bad input or an unreadable live state: one line on stderr, exit status 2. Standard output
holds only the answer (``-o json`` is one JSON document): what the client logs meanwhile (a
credential plugin run, a retried request) goes to standard error as JSON lines.

``what-if -f`` files are read as every offline input is (``yamlload.read_input``: a regular file,
or standard input, of at most ``MAX_CHANGES_BYTES``)."""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from collections.abc import Mapping, Sequence
from typing import Any

from fleetsched.api.text import for_terminal

EXIT_BAD_INPUT = 2
EXIT_UNSCHEDULABLE = 3  # what-if: some binding would become unschedulable
# The files of changes laid over the live state: a few policies, workloads or Clusters. Parsing takes
# about 30 times a file's size in memory: 16 MiB is room for thousands of objects.
MAX_CHANGES_BYTES = 16 << 20


class _Refused(Exception):
    pass


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--kubeconfig",
        metavar="FILE",
        help="kubeconfig of the control plane (default: $KUBECONFIG, in-cluster, ~/.kube/config)",
    )
    parser.add_argument(
        "--config",
        metavar="FILE",
        help="the scheduler's SchedulerConfiguration file, as given to `fleetsched scheduler --config` "
        "(default: the default profile)",
    )
    parser.add_argument(
        "--feature-gates", default="", help="the scheduler's --feature-gates, as given to it"
    )


def _flags(args: argparse.Namespace) -> list[str]:
    flags = []
    if args.config:
        flags += ["--config", args.config]
    if args.feature_gates:
        flags += ["--feature-gates", args.feature_gates]
    return flags


def _logs_to_stderr() -> None:
    """Log lines (JSON) on standard error: standard output is the answer's alone."""
    from fleetsched.kube import logs

    logs.configure("info")


def _fail(command: str, message: str) -> int:
    print(for_terminal(f"fleetsched {command}: {message}"), file=sys.stderr)
    return EXIT_BAD_INPUT


# -- explain -------------------------------------------------------------------------------------


def add_explain_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "binding",
        metavar="rb/NAMESPACE/NAME|crb/NAME",
        help="the binding to explain: its per-cluster story (filters, scores, estimates, division) "
        "as `fleetsched simulate --explain` prints it for the live Clusters and this binding",
    )
    _common(parser)


def run_explain(args: argparse.Namespace) -> int:
    from fleetsched.live import state
    from fleetsched.live.run import simulate

    _logs_to_stderr()
    try:
        kind, namespace, name = state.parse_binding_ref(args.binding)
    except ValueError as exc:
        return _fail("explain", str(exc))
    try:
        objects = state.read_binding_state(args.kubeconfig, kind, namespace, name)
    except state.LiveError as exc:
        return _fail("explain", str(exc))
    result = simulate(objects, ["--explain", *_flags(args)])
    sys.stderr.write(result.stderr.replace("fleetsched simulate:", "fleetsched explain:"))
    sys.stdout.write(result.stdout)
    return result.status


# -- what-if -------------------------------------------------------------------------------------


def add_what_if_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "-f",
        "--filename",
        dest="files",
        action="append",
        required=True,
        metavar="FILE",
        help="YAML file of changed or new policies, workloads or Clusters laid over the live state "
        "(repeatable; '-' = stdin); the exit status is 3 when a binding scheduled now (or new) would "
        "not be scheduled, 2 on bad input or an unreadable live state, 0 otherwise",
    )
    parser.add_argument(
        "-o",
        "--output",
        choices=("text", "json"),
        default="text",
        help="text (default): the bindings that would change, before and after, the replicas per "
        "cluster, and the steps of each move under a move budget (moveBudget in --config, or the binding's "
        "scheduler.fleetsched.io/max-unavailable / max-surge); json: the same for machines",
    )
    from fleetsched.simulate.command import add_validate_argument

    add_validate_argument(parser)
    _common(parser)


def _read_changes(files: Sequence[str], validate: str = "strict") -> list[Mapping[str, Any]]:
    """The files' objects, each checked as ``simulate`` checks its input (unknown fields as
    ``--validate`` says, every value), so a mistake is named with its file, document, line and
    column rather than as a document of the live state it is laid over."""
    from fleetsched.api.load import KARMADA_KINDS, TEMPLATE_KINDS, parse_object
    from fleetsched.api.yamlload import LoadError, Source, decode_text, iter_documents, read_input
    from fleetsched.simulate.command import warn_on_stderr

    out: list[Mapping[str, Any]] = []
    try:
        for name in files:
            text = decode_text(read_input(name, limit=MAX_CHANGES_BYTES), name)
            for number, doc in iter_documents(text, name):
                if doc is None:
                    continue
                items = doc.get("items") if isinstance(doc, Mapping) and doc.get("kind") == "List" else [doc]
                for i, item in enumerate(items if isinstance(items, list) else [None]):
                    where = f"{name}: document {number}" + (f", items[{i}]" if doc is not item else "")
                    if not isinstance(item, Mapping):
                        raise _Refused(f"{where}: must be an object")
                    if not item.get("kind") or not (item.get("metadata") or {}).get("name"):
                        raise _Refused(f"{where}: kind and metadata.name: Required value")
                    if (item.get("apiVersion"), item.get("kind")) in KARMADA_KINDS.keys() | TEMPLATE_KINDS:
                        source = Source(name, number, None if doc is item else i)
                        try:
                            parse_object(item, source, validate=validate, warn=warn_on_stderr)
                        except LoadError as exc:
                            raise exc.with_position(text, () if doc is item else ("items", i)) from None
                    out.append(item)
    except LoadError as exc:
        raise _Refused(str(exc)) from None
    return out


_NOTE = "fleetsched simulate: note: "


def _scheduled(
    objects: Sequence[Mapping[str, Any]], flags: Sequence[str], what: str
) -> tuple[list[Any], list[str]]:
    """The scheduled bindings, and simulate's notes of the policies that select nothing."""
    from fleetsched.live.diff import to_schedule
    from fleetsched.live.run import simulate

    result = simulate(to_schedule(objects), ["-o", "json", *flags])
    if result.status != 0:
        message = result.stderr.strip().replace("fleetsched simulate: ", "")
        raise _Refused(f"{what}: {message}")
    notes = [line[len(_NOTE):] for line in result.stderr.splitlines()
             if line.startswith(_NOTE) and " selects nothing: " in line]
    return list(json.loads(result.stdout)["items"]), notes


def _move_budget(config: str | None) -> Any:
    """The configuration's ``moveBudget`` (None without a file or a budget)."""
    if not config:
        return None
    from fleetsched.scheduler.config import ConfigError, PluginLoadError, load_configuration

    try:
        return load_configuration(config, entry_points=True).configuration.move_budget
    except (ConfigError, PluginLoadError) as exc:
        raise _Refused(str(exc)) from None


def _clusters(objects: Sequence[Mapping[str, Any]]) -> list[Any]:
    """The Clusters of a state as the scheduler sees them (a malformed one left out, as it does)."""
    from fleetsched.scheduler.convert import ConversionError, cluster_from_dict

    out = []
    for obj in objects:
        if obj.get("kind") == "Cluster":
            try:
                out.append(cluster_from_dict(obj))
            except ConversionError:
                continue
    return out


def _told_of_nothing(policies: Sequence[Mapping[str, Any]], changes: Sequence[Mapping[str, Any]]) -> set[str]:
    """``Kind ref`` of the files' policies whose every selector names a kind the state holds all of
    (the templates what-if reads, or a kind the files give): only of those is "selects nothing"
    known to be true."""
    from fleetsched.live.state import TEMPLATES

    read = {(t.api_version, t.kind) for t in TEMPLATES}
    read |= {(c.get("apiVersion"), c.get("kind")) for c in changes}
    out = set()
    for policy in policies:
        selectors = (policy.get("spec") or {}).get("resourceSelectors") or ()
        if all((s.get("apiVersion"), s.get("kind")) in read for s in selectors):
            md = policy.get("metadata") or {}
            namespaced = policy.get("kind") == "PropagationPolicy"
            name = str(md.get("name"))
            ref = f"{md.get('namespace') or 'default'}/{name}" if namespaced else name
            out.add(f"{policy.get('kind')} {ref}")
    return out


def run_what_if(args: argparse.Namespace) -> int:
    from fleetsched.live import state
    from fleetsched.live.diff import compare, overlay, text_lines

    _logs_to_stderr()
    try:
        changes = _read_changes(args.files, args.validate)
        live = state.read_state(args.kubeconfig)
        flags = _flags(args)
        before, noted = _scheduled(live, flags, "the live state")
        changed = overlay(live, changes)
        after, notes = _scheduled(changed, flags, "the live state with the files")
        budget = _move_budget(args.config)
        policies = [c for c in changes if c.get("kind") in ("PropagationPolicy", "ClusterPropagationPolicy")]
        unserved = state.unserved_selectors(args.kubeconfig, policies)
    except (_Refused, state.LiveError) as exc:
        return _fail("what-if", str(exc))
    what_if = compare(before, after, budget=budget, clusters=_clusters(changed))
    told = _told_of_nothing(policies, changes)
    fresh = [n for n in notes if n not in noted and n.split(" selects nothing: ")[0] in told]
    what_if = dataclasses.replace(what_if, notes=(*unserved, *fresh))
    if args.output == "json":
        sys.stdout.write(json.dumps(what_if.to_json(), indent=2) + "\n")
    else:
        for line in text_lines(what_if):
            sys.stdout.write(for_terminal(line) + "\n")
    return EXIT_UNSCHEDULABLE if what_if.unschedulable else 0
