"""Where a connection comes from and what a kubeconfig may say (fleetsched/kube/auth.py, loading).

The order --kubeconfig, KUBECONFIG (merged: the first file to name a cluster, user or context, or
to set current-context, wins), the pod's ServiceAccount, ~/.kube/config; every unusable case is a
``KubeconfigError`` of one line naming the file and field; token files and credential plugins are
kept current by ``Credentials`` (fake clocks here; the real thing in tests/e2e/test_credentials.py).
"""

from __future__ import annotations

import base64
import json
import os
import stat
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from fleetsched.kube import auth
from fleetsched.kube.auth import AuthHealth, Credentials, KubeconfigError, describe, load_connection


def kubeconfig(path: Path, *, context: str | None, clusters: dict[str, dict[str, Any]] | None = None,
               users: dict[str, dict[str, Any]] | None = None,
               contexts: dict[str, tuple[str, str]] | None = None) -> Path:
    doc: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": n, "cluster": c} for n, c in (clusters or {}).items()],
        "users": [{"name": n, "user": u} for n, u in (users or {}).items()],
        "contexts": [{"name": n, "context": {"cluster": c, "user": u}}
                     for n, (c, u) in (contexts or {}).items()],
    }
    if context is not None:
        doc["current-context"] = context
    path.write_text(yaml.safe_dump(doc))
    return path


NO_POD: dict[str, str] = {}


def load(kubeconfig_path: str | None, env: dict[str, str], home: Path) -> auth.Connection:
    return load_connection(kubeconfig_path, environ=env, home=str(home))


def test_kubeconfig_list_merges_first_wins_and_paths_are_relative_to_their_own_file(tmp_path: Path) -> None:
    first, second = tmp_path / "a", tmp_path / "b"
    first.mkdir()
    second.mkdir()
    (second / "token").write_text("from-b\n")
    kubeconfig(first / "config", context=None,
               clusters={"shared": {"server": "http://first:1"}},
               users={"u": {"token": "from-a"}})
    kubeconfig(second / "config", context="ctx",
               clusters={"shared": {"server": "http://second:2"}, "own": {"server": "http://own:3"}},
               users={"u": {"tokenFile": "token"}, "v": {"tokenFile": "token"}},
               contexts={"ctx": ("shared", "v"), "other": ("own", "u")})
    listed = os.pathsep.join([str(tmp_path / "missing"), str(first / "config"), str(second / "config")])
    connection = load(None, {"KUBECONFIG": listed}, tmp_path)
    # cluster "shared" is the first file's; user v only exists in the second, its tokenFile relative to it
    assert connection.server == "http://first:1"
    assert connection.token_file == str(second / "token")
    assert 'user "v"' in connection.identity and "context ctx" in connection.identity

    # the first file to set current-context wins (the kubernetes package's merger keeps the last)
    third = kubeconfig(tmp_path / "third", context="other", clusters={}, users={}, contexts={})
    swapped = load(None, {"KUBECONFIG": os.pathsep.join([str(third), str(second / "config")])}, tmp_path)
    assert (swapped.server, swapped.token_file) == ("http://own:3", str(second / "token"))


def test_explicit_kubeconfig_beats_the_environment_and_home(tmp_path: Path) -> None:
    explicit = kubeconfig(tmp_path / "explicit", context="c", clusters={"k": {"server": "http://explicit:1"}},
                          users={"u": {}}, contexts={"c": ("k", "u")})
    listed = kubeconfig(tmp_path / "listed", context="c", clusters={"k": {"server": "http://listed:1"}},
                        users={"u": {}}, contexts={"c": ("k", "u")})
    (tmp_path / ".kube").mkdir()
    kubeconfig(tmp_path / ".kube" / "config", context="c", clusters={"k": {"server": "http://home:1"}},
               users={"u": {}}, contexts={"c": ("k", "u")})
    env = {"KUBECONFIG": str(listed), "KUBERNETES_SERVICE_HOST": "10.0.0.1", "KUBERNETES_SERVICE_PORT": "443"}
    assert load(str(explicit), env, tmp_path).server == "http://explicit:1"
    assert load(None, env, tmp_path).server == "http://listed:1"
    # no KUBECONFIG, the pod environment without its token: ~/.kube/config (controller-runtime's order)
    del env["KUBECONFIG"]
    assert load_connection(None, environ=env, home=str(tmp_path), token_path=str(tmp_path / "none"),
                           ca_path=str(tmp_path / "none")).server == "http://home:1"


def test_in_cluster_reads_the_service_account_token_file(tmp_path: Path) -> None:
    token, ca = tmp_path / "token", tmp_path / "ca.crt"
    token.write_text("sa-token")
    ca.write_bytes(auth_ca_pem())
    env = {"KUBERNETES_SERVICE_HOST": "10.0.0.1", "KUBERNETES_SERVICE_PORT": "6443"}
    connection = load_connection(None, environ=env, home=str(tmp_path), token_path=str(token),
                                 ca_path=str(ca))
    assert (connection.server, connection.ca_path, connection.token_file) == (
        "https://10.0.0.1:6443", str(ca), str(token))
    assert connection.token is None and "ServiceAccount" in connection.identity


def test_an_in_cluster_token_file_that_is_a_fifo_is_refused_before_it_is_opened(tmp_path: Path) -> None:
    token = tmp_path / "token"
    os.mkfifo(token)  # opening it to read would wait for a writer for ever
    env = {"KUBERNETES_SERVICE_HOST": "10.0.0.1", "KUBERNETES_SERVICE_PORT": "6443"}
    with pytest.raises(KubeconfigError) as caught:
        load_connection(None, environ=env, home=str(tmp_path), token_path=str(token),
                        ca_path=str(tmp_path / "ca.crt"))
    assert str(caught.value) == f"in-cluster config: token file {token}: not a regular file"


def auth_ca_pem() -> bytes:
    from fleetsched.testing.pki import CertificateAuthority

    return CertificateAuthority.create("test-ca").cert_pem


@pytest.mark.parametrize(("setup", "expected"), [
    pytest.param(lambda d: (str(d / "nope"), {}), "--kubeconfig {d}/nope: no such file", id="missing"),
    pytest.param(lambda d: ((d / "empty").write_text("\n") and str(d / "empty"), {}),
                 "--kubeconfig {d}/empty: the file is empty", id="empty"),
    pytest.param(lambda d: (None, {"KUBECONFIG": f"{d}/x{os.pathsep}{d}/y"}),
                 "KUBECONFIG={d}/x" + os.pathsep + "{d}/y: none of its files exists or holds a config",
                 id="kubeconfig-env-missing"),
    pytest.param(lambda d: (None, {}), "no kubeconfig: pass --kubeconfig, set KUBECONFIG, or run in a pod "
                 "(KUBERNETES_SERVICE_HOST is not set and ~/.kube/config does not exist)", id="nothing"),
    pytest.param(lambda d: (None, {"KUBERNETES_SERVICE_HOST": "h", "KUBERNETES_SERVICE_PORT": "1"}),
                 "in-cluster config: Service token file does not exist.", id="pod-without-token"),
    pytest.param(lambda d: ((d / "bad").write_text("a: [") and str(d / "bad"), {}),
                 "--kubeconfig {d}/bad: not a kubeconfig:", id="not-yaml"),
])
def test_unusable_sources_are_one_line_errors(tmp_path: Path, setup: Any, expected: str) -> None:
    path, env = setup(tmp_path)
    with pytest.raises(KubeconfigError) as caught:
        load_connection(path, environ=env, home=str(tmp_path), token_path=str(tmp_path / "t"),
                        ca_path=str(tmp_path / "c"))
    message = str(caught.value)
    assert message.startswith(expected.format(d=tmp_path)), message
    assert "\n" not in message


def user_error(tmp_path: Path, user: dict[str, Any], cluster: dict[str, Any] | None = None) -> str:
    path = kubeconfig(tmp_path / "config", context="c", clusters={"k": cluster or {"server": "http://h:1"}},
                      users={"me": user}, contexts={"c": ("k", "me")})
    with pytest.raises(KubeconfigError) as caught:
        load_connection(str(path), environ={}, home=str(tmp_path))
    assert "\n" not in str(caught.value)
    return str(caught.value)


def test_what_a_user_entry_may_not_say(tmp_path: Path) -> None:
    where = f"--kubeconfig {tmp_path}/config: users[me]"
    v1 = auth.EXEC_API_VERSIONS[0]
    assert user_error(tmp_path, {"token": "t", "exec": {"command": "x", "apiVersion": v1,
                                                        "interactiveMode": "Never"}}) == (
        f"{where}: more than one authentication method (token, exec); one is allowed")
    assert user_error(tmp_path, {"auth-provider": {"name": "oidc"}}).startswith(
        f"{where}.auth-provider: 'oidc' is not supported; use an exec credential plugin")
    assert user_error(tmp_path, {"exec": {"command": "x", "apiVersion": auth.EXEC_API_VERSIONS[0]}}) == (
        f"{where}.exec.interactiveMode: must be set for client.authentication.k8s.io/v1")
    old = "client.authentication.k8s.io/v1alpha1"
    assert user_error(tmp_path, {"exec": {"command": "x", "apiVersion": old}}).startswith(
        f"{where}.exec.apiVersion: '{old}' is not supported")
    assert user_error(tmp_path, {"exec": {"apiVersion": auth.EXEC_API_VERSIONS[0]}}) == (
        f"{where}.exec: exec: malformed request. missing key 'command'")
    assert user_error(tmp_path, {"tokenFile": "absent"}).startswith(f"{where}.tokenFile {tmp_path}/absent:")
    assert user_error(tmp_path, {"client-certificate": "c.pem"}) == (
        f"{where}.client-certificate: File does not exist: {tmp_path}/c.pem")
    (tmp_path / "c.pem").write_bytes(auth_ca_pem())
    assert user_error(tmp_path, {"client-certificate": "c.pem"}).startswith(f"{where}: client-key is not set")
    socks = user_error(tmp_path, {}, {"server": "https://h:1", "proxy-url": "socks5://p:1080",
                                      "insecure-skip-tls-verify": True})
    assert socks == (f"--kubeconfig {tmp_path}/config: clusters[k].proxy-url: socks5 scheme is not supported "
                     "(use an http:// proxy)")


def test_cluster_fields_tls_server_name_proxy_and_ca_data(tmp_path: Path) -> None:
    ca = auth_ca_pem()
    path = kubeconfig(tmp_path / "config", context="c", clusters={"k": {
        "server": "https://10.1.2.3:6443/", "certificate-authority-data": base64.b64encode(ca).decode(),
        "tls-server-name": "kubernetes", "proxy-url": "http://user:p%40ss@proxy:3128"}},
        users={"me": {"token": "static"}}, contexts={"c": ("k", "me")})
    connection = load_connection(str(path), environ={}, home=str(tmp_path))
    assert (connection.server, connection.tls_server_name, connection.proxy_url, connection.token) == (
        "https://10.1.2.3:6443", "kubernetes", "http://user:p%40ss@proxy:3128", "static")
    assert connection.ca_path is not None and Path(connection.ca_path).read_bytes() == ca
    parts = auth._proxy_parts(connection.proxy_url or "", "proxy-url")
    assert parts == ("proxy", 3128, "Basic " + base64.b64encode(b"user:p@ss").decode())


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


async def test_a_token_file_is_read_again_after_its_period_and_at_once_after_a_401(tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_text("one")
    clock = Clock()
    credentials = Credentials(auth.Connection(server="http://h:1", token_file=str(token)), clock=clock)
    assert await credentials.authorization() == "Bearer one"
    token.write_text("two")
    clock.now += auth.TOKEN_FILE_PERIOD - auth.TOKEN_FILE_LEEWAY - 1
    assert await credentials.authorization() == "Bearer one"  # cached, as client-go caches it
    clock.now += 1
    assert await credentials.authorization() == "Bearer two"
    token.write_text("three")
    assert await credentials.renew(401, "Bearer two") is True
    assert await credentials.authorization() == "Bearer three"
    assert await credentials.renew(401, "Bearer three") is False  # nothing new: no point sending again
    token.write_text("")  # mid-rewrite: the last token read is kept
    clock.now += auth.TOKEN_FILE_PERIOD
    assert await credentials.authorization() == "Bearer three"


PLUGIN = """\
import json, os, sys, pathlib
state = pathlib.Path(sys.argv[1])
runs = int(state.read_text()) + 1 if state.exists() else 1
state.write_text(str(runs))
info = json.loads(os.environ["KUBERNETES_EXEC_INFO"])
status = {"token": f"run-{runs}-{os.environ['GREETING']}-{info['spec']['cluster']['server']}"}
expiry = state.with_name("expiry")
if expiry.exists():
    status["expirationTimestamp"] = expiry.read_text()
print(json.dumps({"apiVersion": info["apiVersion"], "kind": "ExecCredential", "status": status}))
"""


def plugin_kubeconfig(tmp_path: Path) -> Path:
    script = tmp_path / "plugin.py"
    script.write_text(PLUGIN)
    return kubeconfig(tmp_path / "config", context="c", clusters={"k": {"server": "http://h:1"}},
                      users={"me": {"exec": {
                          "apiVersion": auth.EXEC_API_VERSIONS[0], "command": sys.executable,
                          "args": [str(script), str(tmp_path / "runs")],
                          "env": [{"name": "GREETING", "value": "hi"}], "interactiveMode": "Never",
                          "provideClusterInfo": True}}},
                      contexts={"c": ("k", "me")})


async def test_an_exec_plugin_is_cached_until_its_expiry_and_run_again_after_a_401(tmp_path: Path) -> None:
    (tmp_path / "expiry").write_text("2030-01-01T00:00:00Z")
    connection = load_connection(str(plugin_kubeconfig(tmp_path)), environ={}, home=str(tmp_path))
    wall = Clock()
    wall.now = 1_800_000_000.0  # 2027
    credentials = Credentials(connection, wall=wall)
    assert await credentials.authorization() == "Bearer run-1-hi-http://h:1"  # env and cluster info reach it
    assert await credentials.authorization() == "Bearer run-1-hi-http://h:1"
    assert (tmp_path / "runs").read_text() == "1"
    wall.now = 1_893_456_000.0  # 2030-01-01T00:00:00Z: expired
    (tmp_path / "expiry").write_text("2031-01-01T00:00:00Z")
    assert await credentials.authorization() == "Bearer run-2-hi-http://h:1"
    expiration = credentials.expiration()
    assert expiration is not None and expiration.year == 2031
    assert await credentials.renew(401, "Bearer run-2-hi-http://h:1") is True
    assert await credentials.authorization() == "Bearer run-3-hi-http://h:1"
    # a 401 for a token that was already replaced does not run it once more
    assert await credentials.renew(401, "Bearer run-2-hi-http://h:1") is True
    assert (tmp_path / "runs").read_text() == "3"


async def test_a_plugin_without_expiry_runs_once_and_a_failing_plugin_is_one_line(tmp_path: Path) -> None:
    connection = load_connection(str(plugin_kubeconfig(tmp_path)), environ={}, home=str(tmp_path))
    credentials = Credentials(connection)
    for _ in range(3):
        assert await credentials.authorization() == "Bearer run-1-hi-http://h:1"
    (tmp_path / "plugin.py").write_text("import sys; print('nope', file=sys.stderr); sys.exit(3)")
    await credentials.renew(401, "x")  # used something else: nothing to run
    with pytest.raises(auth.CredentialsError) as caught:
        await credentials.renew(401, "Bearer run-1-hi-http://h:1")
    assert str(caught.value) == f"exec plugin {sys.executable!r}: exec: process returned 3. nope"
    assert isinstance(caught.value, ConnectionError)  # retried by callers like an unreachable server


@pytest.mark.parametrize(("method", "path", "watch", "expected"), [
    ("PUT", "/apis/coordination.k8s.io/v1/namespaces/ks/leases/l", False,
     ("update", "leases.coordination.k8s.io")),
    ("GET", "/api/v1/nodes", True, ("watch", "nodes")),
    ("GET", "/api/v1/namespaces/x/pods?limit=1", False, ("list", "pods")),
    ("GET", "/api/v1/namespaces/x", False, ("get", "namespaces")),
    ("PATCH", "/apis/work.karmada.io/v1alpha2/namespaces/n/resourcebindings/b/status?fieldManager=f", False,
     ("patch", "resourcebindings.work.karmada.io/status")),
    ("POST", "/api/v1/namespaces/n/events", False, ("create", "events")),
])
def test_requests_are_named_as_rbac_names_them(method: str, path: str, watch: bool,
                                               expected: tuple[str, str]) -> None:
    assert describe(method, path, watch=watch) == expected


def test_persistent_refusals_make_a_problem_and_one_log_line() -> None:
    from structlog.testing import capture_logs

    health = AuthHealth('user "u"')
    forbidden = json.dumps({"message": 'leases "l" is forbidden: User "u" cannot update resource "leases"'})
    admission = json.dumps({"message": 'admission webhook "w" denied the request: no'})
    with capture_logs() as logs:
        for _ in range(5):
            health.observe(403, "create", "resourcebindings", admission.encode())  # about the object
        assert health.problem() is None
        health.observe(403, "update", "leases", forbidden.encode())
        health.observe(403, "update", "leases", forbidden.encode())
        assert health.problem() is None  # not yet persistent
        health.observe(403, "update", "leases", forbidden.encode())
        health.observe(403, "update", "leases", forbidden.encode())
        problem = health.problem()
        assert problem == ('credentials refused: update leases answered 403 Forbidden 4 times for user "u": '
                           'leases "l" is forbidden: User "u" cannot update resource "leases"')
        health.observe(200, "update", "leases")
        assert health.problem() is None
    refused = [e for e in logs if e["event"] == "credentials_refused"]
    assert len(refused) == 1 and refused[0]["identity"] == 'user "u"' and refused[0]["verb"] == "update"
    assert [e["event"] for e in logs if e["event"] == "credentials_accepted_again"] == [
        "credentials_accepted_again"]


def test_the_temporary_files_of_data_fields_are_private(tmp_path: Path) -> None:
    ca = auth_ca_pem()
    path = kubeconfig(tmp_path / "config", context="c", clusters={"k": {
        "server": "https://h:1", "certificate-authority-data": base64.b64encode(ca).decode()}},
        users={"me": {}}, contexts={"c": ("k", "me")})
    connection = load_connection(str(path), environ={}, home=str(tmp_path))
    assert connection.ca_path is not None
    assert stat.S_IMODE(os.stat(connection.ca_path).st_mode) & 0o077 == 0
