"""Credentials that change under a running scheduler, against a real kube-apiserver.

The tokens are the apiserver's own: ServiceAccount tokens from the TokenRequest API, each bound to
a Secret of its own. The apiserver will not issue one for less than ten minutes, so a token's
"expiry" is its Secret's deletion: from then on the apiserver refuses it (401), as it refuses an
expired one, and the test takes seconds instead of ten minutes. The client certificates are
issued by the test control plane's client CA (``Pki.issue_client``); one that lost its rights
answers 403.

- a token file rewritten with a new token, the old one revoked: the scheduler keeps scheduling (the
  401 makes it read the file again and send once more), and stays ready;
- everything revoked, nothing new on disk: ``/readyz`` turns 503 within a minute saying which
  credentials were refused for which verb, with one ``credentials_refused`` log line; a new token
  in the file brings it back;
- an exec plugin (a small script handing out the current token) is run again when its credential
  expires (``expirationTimestamp`` a few seconds ahead), is not run while one without expiry is in
  use, and is run again on a 401;
- a client certificate replaced on disk (the old one's rights then removed) is picked up.
"""

from __future__ import annotations

import ssl
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support.controlplane import APIServer, ControlPlane, wait_until
from tests.support.karmada import (
    apply_with_status,
    binding_state,
    create_objects,
    divided_binding,
    list_bindings,
)
from tests.support.karmada import ready_cluster as a_cluster
from tests.support.processes import SchedulerProcess

NAMESPACE = "creds"
ACCOUNT = "fleetsched"
CLUSTERS = ["c1", "c2"]


@pytest.fixture(scope="module")
def server(isolated_apiserver: APIServer) -> APIServer:
    isolated_apiserver.kubectl("create", "namespace", NAMESPACE)
    isolated_apiserver.kubectl("create", "serviceaccount", ACCOUNT, "-n", NAMESPACE)
    isolated_apiserver.kubectl("create", "clusterrolebinding", "creds-sa", "--clusterrole=cluster-admin",
                               f"--serviceaccount={NAMESPACE}:{ACCOUNT}")
    apply_with_status(isolated_apiserver, [a_cluster(name, 100) for name in CLUSTERS])
    return isolated_apiserver


def issue_token(server: APIServer, secret: str) -> str:
    """A token of the ServiceAccount, valid while the Secret ``secret`` exists."""
    created = server.request("POST", f"/api/v1/namespaces/{NAMESPACE}/secrets",
                             {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": secret}})
    uid = created["metadata"]["uid"]  # type: ignore[index]
    review = server.request("POST", f"/api/v1/namespaces/{NAMESPACE}/serviceaccounts/{ACCOUNT}/token", {
        "apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
        "spec": {"expirationSeconds": 600,
                 "boundObjectRef": {"apiVersion": "v1", "kind": "Secret", "name": secret, "uid": uid}},
    })
    return str(review["status"]["token"])  # type: ignore[index]


def revoke(server: APIServer, secret: str, token: str) -> None:
    """Delete the token's Secret and wait until the apiserver refuses the token (it keeps a token it
    accepted in its authentication cache for up to 10 s)."""
    server.request("DELETE", f"/api/v1/namespaces/{NAMESPACE}/secrets/{secret}")
    context = ssl.create_default_context(cafile=str(server.pki.serving_ca))  # no client certificate
    request = urllib.request.Request(f"{server.url}/api/v1/namespaces/{NAMESPACE}",
                                     headers={"Authorization": f"Bearer {token}"})

    def refused() -> bool:
        try:
            with urllib.request.urlopen(request, timeout=5, context=context):
                return False
        except urllib.error.HTTPError as exc:
            return exc.code == 401

    wait_until(refused, timeout=30, interval=0.5, message=f"the token of {secret} is still taken")


def write_kubeconfig(server: APIServer, path: Path, user: dict[str, Any]) -> Path:
    admin = yaml.safe_load(server.kubeconfig.read_text())
    cluster = admin["clusters"][0]
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "clusters": [cluster],
        "users": [{"name": "under-test", "user": user}],
        "contexts": [{"name": "c", "context": {"cluster": cluster["name"], "user": "under-test"}}],
        "current-context": "c",
    }))
    path.chmod(0o600)
    return path


@pytest.fixture
def scheduler(server: APIServer, tmp_path: Path, request: pytest.FixtureRequest
              ) -> Iterator[Callable[[Path], SchedulerProcess]]:
    started: list[SchedulerProcess] = []

    def start(kubeconfig: Path) -> SchedulerProcess:
        # a Lease of its own: a previous test's replica never holds it
        lease = f"creds-{request.node.name.replace('_', '-')}"[:60].rstrip("-")
        proc = SchedulerProcess(kubeconfig=kubeconfig, log_path=tmp_path / "scheduler.log",
                                extra_args=(f"--leader-elect-resource-name={lease}",))
        started.append(proc)
        return proc.start(timeout=90)

    yield start
    for proc in started:
        proc.stop()


def schedule(server: APIServer, name: str, proc: SchedulerProcess) -> None:
    create_objects(server, [divided_binding(name, NAMESPACE, 4, CLUSTERS)])

    def done() -> bool:
        found = [b for b in list_bindings(server, NAMESPACE) if b["metadata"]["name"] == name]
        return bool(found) and binding_state(found[0])["scheduled"] and sum(
            binding_state(found[0])["clusters"].values()) == 4

    wait_until(done, timeout=60, interval=0.5, message=lambda: f"{name} never scheduled:\n{proc.log_tail()}")


def readyz(proc: SchedulerProcess) -> tuple[int, str]:
    return proc._get("/readyz")


def test_a_rewritten_token_file_keeps_it_scheduling_and_revoked_credentials_turn_it_unready(
        server: APIServer, scheduler: Callable[[Path], SchedulerProcess], tmp_path: Path) -> None:
    token_file = tmp_path / "token"
    first = issue_token(server, "token-1")
    token_file.write_text(first)
    proc = scheduler(write_kubeconfig(server, tmp_path / "kubeconfig", {"tokenFile": str(token_file)}))
    schedule(server, "before", proc)

    second = issue_token(server, "token-2")
    token_file.write_text(second)
    revoke(server, "token-1", first)  # the first token is no more: past its "expiry"
    schedule(server, "after-rotation", proc)
    assert readyz(proc) == (200, "ok")
    assert proc.log_events("token_file_changed")

    revoke(server, "token-2", second)  # revoked, and nothing new in the file
    started = time.monotonic()
    seen: list[tuple[int, str]] = []
    wait_until(lambda: seen.append(readyz(proc)) or seen[-1][1].startswith("credentials refused"),
               timeout=60, interval=0.5, message=lambda: f"never said why: {seen[-3:]}\n{proc.log_tail()}")
    took = time.monotonic() - started
    status, why = seen[-1]
    assert status == 503 and "401 Unauthorized" in why, why
    assert f'user "under-test" of --kubeconfig {tmp_path / "kubeconfig"}' in why, why
    lines = proc.log_events("credentials_refused")
    assert lines and all(line["identity"].startswith('user "under-test"') and line["verb"] for line in lines)
    print(f"unready {took:.1f}s after the revocation: {why}")

    token_file.write_text(issue_token(server, "token-3"))  # a new token: ready again, scheduling
    wait_until(lambda: readyz(proc) == (200, "ok"), timeout=60, interval=0.5,
               message=lambda: f"never ready again: {readyz(proc)}\n{proc.log_tail()}")
    schedule(server, "after-recovery", proc)


PLUGIN = """\
import datetime, json, os, pathlib, sys
here = pathlib.Path(sys.argv[1])
with open(here / "runs", "a") as runs:
    runs.write("x")
status = {"token": (here / "current").read_text().strip()}
lifetime = here / "lifetime"
if lifetime.exists():
    ahead = datetime.timedelta(seconds=float(lifetime.read_text()))
    at = datetime.datetime.now(datetime.timezone.utc) + ahead
    status["expirationTimestamp"] = at.strftime("%Y-%m-%dT%H:%M:%SZ")
info = json.loads(os.environ["KUBERNETES_EXEC_INFO"])
assert info["spec"]["cluster"]["server"].startswith("https://"), info
print(json.dumps({"apiVersion": info["apiVersion"], "kind": "ExecCredential", "status": status}))
"""


def test_an_exec_plugin_is_run_again_on_expiry_and_on_401(
        server: APIServer, scheduler: Callable[[Path], SchedulerProcess], tmp_path: Path) -> None:
    plugin = tmp_path / "plugin.py"
    plugin.write_text(PLUGIN)
    runs = tmp_path / "runs"

    def count() -> int:
        return len(runs.read_text()) if runs.exists() else 0

    first = issue_token(server, "exec-1")
    (tmp_path / "current").write_text(first)
    (tmp_path / "lifetime").write_text("3")  # each credential good for three seconds
    proc = scheduler(write_kubeconfig(server, tmp_path / "kubeconfig", {"exec": {
        "apiVersion": "client.authentication.k8s.io/v1", "command": sys.executable,
        "args": [str(plugin), str(tmp_path)], "interactiveMode": "Never", "provideClusterInfo": True}}))
    schedule(server, "exec-before", proc)
    runs_at_start = count()
    wait_until(lambda: count() >= runs_at_start + 3, timeout=60, interval=0.5,
               message=lambda: f"the plugin was not run again on expiry: {count()} runs")

    (tmp_path / "lifetime").unlink()  # from the next run on: no expiry, kept until refused
    wait_until(lambda: bool(proc.log_events("exec_plugin_ran")) and proc.log_events("exec_plugin_ran")[-1][
        "expires"] == "never", timeout=30, interval=0.5, message="no credential without expiry")
    settled = count()
    time.sleep(8)  # four Lease renewals at least
    assert count() == settled, "a credential without expiry was asked for again"

    (tmp_path / "current").write_text(issue_token(server, "exec-2"))
    revoke(server, "exec-1", first)
    schedule(server, "exec-after-401", proc)
    assert count() == settled + 1  # once, on the first 401
    assert readyz(proc) == (200, "ok")


def test_a_client_certificate_replaced_on_disk_is_picked_up(
        control_plane: ControlPlane, server: APIServer, scheduler: Callable[[Path], SchedulerProcess],
        tmp_path: Path) -> None:
    for user in ("cert-a", "cert-b"):
        server.kubectl("create", "clusterrolebinding", user, "--clusterrole=cluster-admin", f"--user={user}")
    certificate, key = tmp_path / "client.crt", tmp_path / "client.key"
    cert_a, key_a = control_plane.pki.issue_client("cert-a")
    certificate.write_bytes(cert_a)
    key.write_bytes(key_a)
    proc = scheduler(write_kubeconfig(server, tmp_path / "kubeconfig", {
        "client-certificate": str(certificate), "client-key": str(key)}))
    schedule(server, "cert-before", proc)

    cert_b, key_b = control_plane.pki.issue_client("cert-b")
    key.write_bytes(key_b)
    certificate.write_bytes(cert_b)
    server.kubectl("delete", "clusterrolebinding", "cert-a")  # the first certificate's user: no rights now
    wait_until(lambda: server.kubectl("auth", "can-i", "patch", "resourcebindings.work.karmada.io", "-A",
                                      "--as=cert-a", check=False).strip() == "no", timeout=30,
               message="cert-a kept its rights")
    schedule(server, "cert-after", proc)
    assert proc.log_events("client_certificate_reloaded")
    assert readyz(proc) == (200, "ok")
