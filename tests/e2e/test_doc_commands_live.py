"""The commands docs/live.md shows against a live control plane, run as shown on the shipped examples.

A kube-apiserver of its own gets what the walk-through applies (examples/fleet.yaml with its status,
the namespaces, examples/policies.yaml) and the bindings `fleetsched simulate` derives from the live
objects, applied as docs/simulate.md says (`… -o yaml | kubectl apply --server-side -f -`): owned by
their templates, scheduled as the scheduler schedules them. No controller or scheduler runs: the
commands only read. Each `fleetsched` command of the page's blocks (and each inline one that names
a binding or a file of the repository) then runs with that apiserver as its `KUBECONFIG`, exits 0,
and prints what the page shows where the page shows it.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.support.controlplane import APIServer
from tests.support.doc_commands import ROOT, Command, commands
from tests.support.karmada import apply_with_status, load_documents

PAGE = ROOT / "docs" / "live.md"


def live_commands() -> list[Command]:
    found = []
    for command in commands([PAGE]):
        args = command.fleetsched
        if not args or args[0] not in ("explain", "what-if"):
            continue
        if command.inline and command.has_placeholder:
            continue  # `kubectl fleetsched explain rb/… --kubeconfig FILE`: a form, not a command
        found.append(command)
    return found


@pytest.fixture(scope="module")
def examples(isolated_apiserver: APIServer) -> APIServer:
    server = isolated_apiserver
    apply_with_status(server, load_documents((ROOT / "examples" / "fleet.yaml").read_text()))
    for namespace in ("shop", "analytics"):
        server.kubectl("create", "namespace", namespace)
    server.kubectl("apply", "-f", str(ROOT / "examples" / "policies.yaml"))
    # The bindings the policy controller and the scheduler would write: simulate of the live objects,
    # whose templates have uids, so each binding is owned by its template as the controller's are.
    live = server.kubectl("get", "clusters,propagationpolicies,deployments,configmaps", "-A", "-o", "yaml")
    bindings = subprocess.run(
        [sys.executable, "-m", "fleetsched", "simulate", "-", "-o", "yaml"], input=live,
        capture_output=True, text=True, cwd=ROOT, check=True,
    ).stdout
    server.kubectl("apply", "--server-side", "-f", "-", input=bindings)
    return server


def test_the_page_shows_live_commands_to_run() -> None:
    shown = [c.fleetsched[0] for c in live_commands() if c.fleetsched]
    assert shown.count("explain") >= 2 and shown.count("what-if") >= 1, shown


@pytest.mark.parametrize("command", live_commands(), ids=lambda c: f"{c.where} {c.text}")
def test_the_command_runs_as_shown(examples: APIServer, command: Command) -> None:
    args = command.fleetsched
    assert args is not None
    env = {**os.environ, "KUBECONFIG": str(examples.kubeconfig),
           "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    done = subprocess.run([sys.executable, "-m", "fleetsched", *args], capture_output=True, text=True,
                          cwd=ROOT, env=env, timeout=180)
    assert done.returncode == 0, f"{command.where}: {command.text}\n{done.stderr}"
    if command.output is not None:
        printed = done.stdout[: len(command.output)] if command.prefix else done.stdout
        assert printed == command.output, f"{command.where}: {command.text}\n{done.stdout}"
    if args[0] == "explain":
        kind, _, name = args[1].partition("/")
        assert done.stdout.startswith(
            f"{'ResourceBinding' if kind == 'rb' else 'ClusterResourceBinding'} {name}\n"), done.stdout
