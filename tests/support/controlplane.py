"""A real Kubernetes control plane (etcd + kube-apiserver) on loopback, for tests and for people.

What this module owns: finding the binaries (``KUBEBUILDER_ASSETS`` or ``hack/envtest.sh``), a
throwaway PKI (``fleetsched.testing.pki``), starting etcd and kube-apiservers on free ports, an admin
kubeconfig, readiness checks, applying ``crds/``, optional kube-controller-manager (garbage
collection and namespace deletion), and tearing all of it down. Extra kube-apiservers ("member
clusters", or fresh isolated control planes) share the one etcd under distinct ``--etcd-prefix``.

It must not know about fleetsched itself: no operator processes are started here.

Command line (used by ``hack/local-up.sh``)::

    python -m tests.support.controlplane up [--members N] [--controller-manager] [--dir DIR]
"""

from __future__ import annotations

import argparse
import atexit
import base64
import contextlib
import json
import os
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from fleetsched.testing.pki import CertificateAuthority, pem_key, write_private

REPO_ROOT = Path(__file__).resolve().parents[2]
CRDS_DIR = REPO_ROOT / "crds"
ENVTEST_SCRIPT = REPO_ROOT / "hack" / "envtest.sh"
REQUIRED_BINARIES = ("etcd", "kube-apiserver", "kubectl")
CONTROLLER_MANAGER = "kube-controller-manager"

# On 2 shared cores a cold kube-apiserver takes 10-30 s; allow generous time (envtest-notes §4).
START_TIMEOUT = float(os.environ.get("FLEETSCHED_CONTROLPLANE_START_TIMEOUT", "120"))

T = TypeVar("T")


class ControlPlaneUnavailable(RuntimeError):
    """The binaries could not be provided or a process did not come up; the message says why."""


# ---------------------------------------------------------------------------------------------
# Binaries


def find_binaries(*, build: bool = True) -> Path:
    """Return the directory holding etcd, kube-apiserver and kubectl.

    ``KUBEBUILDER_ASSETS`` wins when it holds them; otherwise ``hack/envtest.sh`` provides them
    (it returns at once when they are cached and builds them on the first run).
    """
    assets = os.environ.get("KUBEBUILDER_ASSETS")
    if assets and all((Path(assets) / b).is_file() for b in REQUIRED_BINARIES):
        return Path(assets)
    if not build:
        raise ControlPlaneUnavailable(
            "control-plane binaries not found: set KUBEBUILDER_ASSETS to a directory holding "
            f"{', '.join(REQUIRED_BINARIES)}, or run hack/envtest.sh"
        )
    try:
        proc = subprocess.run(
            [str(ENVTEST_SCRIPT)], stdout=subprocess.PIPE, stderr=None, text=True, check=False
        )
    except OSError as exc:
        raise ControlPlaneUnavailable(f"cannot run {ENVTEST_SCRIPT}: {exc}") from exc
    lines = proc.stdout.strip().splitlines()
    if proc.returncode != 0 or not lines:
        raise ControlPlaneUnavailable(
            f"{ENVTEST_SCRIPT} failed (exit {proc.returncode}) and KUBEBUILDER_ASSETS is "
            f"{'set to ' + assets + ' but incomplete' if assets else 'unset'}: "
            "the real kube-apiserver + etcd needed by e2e tests could not be provided"
        )
    directory = Path(lines[-1])
    missing = [b for b in REQUIRED_BINARIES if not (directory / b).is_file()]
    if missing:
        raise ControlPlaneUnavailable(f"{ENVTEST_SCRIPT} printed {directory}, which lacks {missing}")
    return directory


# ---------------------------------------------------------------------------------------------
# Small helpers


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_until(
    probe: Callable[[], T | None],
    *,
    timeout: float,
    interval: float = 0.2,
    message: str | Callable[[], str] = "condition not met",
) -> T:
    """Call ``probe`` until it returns something truthy; return that, or raise TimeoutError."""
    deadline = time.monotonic() + timeout
    last_error: BaseException | None = None
    while True:
        try:
            value = probe()
            if value:
                return value
        except Exception as exc:  # the probe's failures are part of "not yet"
            last_error = exc
        if time.monotonic() >= deadline:
            text = message() if callable(message) else message
            suffix = f" (last error: {last_error!r})" if last_error else ""
            raise TimeoutError(f"after {timeout:.0f}s: {text}{suffix}")
        time.sleep(interval)


def _tail(path: Path, lines: int = 30) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "<no log>"


# ---------------------------------------------------------------------------------------------
# PKI


@dataclass(frozen=True)
class Pki:
    """Every certificate and key a control plane needs, written under ``directory``."""

    directory: Path
    serving_ca: Path
    serving_cert: Path
    serving_key: Path
    client_ca: Path
    client_ca_key: Path
    admin_cert: Path
    admin_key: Path
    service_account_public: Path
    service_account_private: Path

    @classmethod
    def create(cls, directory: Path) -> Pki:
        directory.mkdir(parents=True, exist_ok=True)
        serving = CertificateAuthority.create("fleetsched-test-serving-ca")
        clients = CertificateAuthority.create("fleetsched-test-client-ca")
        serving_cert, serving_key = serving.issue(
            "kube-apiserver",
            dns_names=["localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc"],
            ip_addresses=["127.0.0.1", "10.0.0.1"],
            server=True,
        )
        admin_cert, admin_key = clients.issue("admin", organizations=["system:masters"])
        sa_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        sa_public = sa_key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
        files = {
            "serving-ca.crt": serving.cert_pem,
            "apiserver.crt": serving_cert,
            "apiserver.key": serving_key,
            "client-ca.crt": clients.cert_pem,
            "client-ca.key": clients.key_pem,
            "admin.crt": admin_cert,
            "admin.key": admin_key,
            "sa.pub": sa_public,
            "sa.key": pem_key(sa_key),
        }
        for name, data in files.items():
            write_private(directory / name, data)
        return cls(
            directory=directory,
            serving_ca=directory / "serving-ca.crt",
            serving_cert=directory / "apiserver.crt",
            serving_key=directory / "apiserver.key",
            client_ca=directory / "client-ca.crt",
            client_ca_key=directory / "client-ca.key",
            admin_cert=directory / "admin.crt",
            admin_key=directory / "admin.key",
            service_account_public=directory / "sa.pub",
            service_account_private=directory / "sa.key",
        )


    def issue_client(self, user: str, *, groups: Sequence[str] = ()) -> tuple[bytes, bytes]:
        """A client certificate (PEM) and key the apiservers take as ``user`` in ``groups``."""
        authority = CertificateAuthority(
            key=serialization.load_pem_private_key(self.client_ca_key.read_bytes(), None),  # type: ignore[arg-type]
            cert=x509.load_pem_x509_certificate(self.client_ca.read_bytes()),
        )
        return authority.issue(user, organizations=groups)


# ---------------------------------------------------------------------------------------------
# Processes

_LIVE_PROCESSES: set[subprocess.Popen[bytes]] = set()
_LIVE_LOCK = threading.Lock()


def _kill_leftovers() -> None:
    with _LIVE_LOCK:
        procs = list(_LIVE_PROCESSES)
    for proc in procs:
        _stop_process(proc)


atexit.register(_kill_leftovers)


def _start_process(
    argv: Sequence[str], log_path: Path, env: Mapping[str, str] | None = None
) -> subprocess.Popen[bytes]:
    log_file = log_path.open("ab")
    try:
        proc = subprocess.Popen(
            list(argv), stdout=log_file, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            start_new_session=True, env={**os.environ, **env} if env else None,
        )
    finally:
        log_file.close()
    with _LIVE_LOCK:
        _LIVE_PROCESSES.add(proc)
    return proc


def _stop_process(proc: subprocess.Popen[bytes], *, grace: float = 10.0) -> None:
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            proc.wait(timeout=grace)
    with _LIVE_LOCK:
        _LIVE_PROCESSES.discard(proc)


def _check_running(proc: subprocess.Popen[bytes] | None, what: str, log_path: Path) -> None:
    """Raise with the end of the log when a server process has already exited."""
    assert proc is not None
    if proc.poll() is not None:
        log = _tail(log_path)
        raise ControlPlaneUnavailable(f"{what} exited with {proc.returncode}\n--- {log_path}:\n{log}")


def _start_on_free_ports(
    launch: Callable[[], subprocess.Popen[bytes]], ready: Callable[[], None], log_path: Path, *, gave_up: str
) -> None:
    """``launch`` a server on freshly picked loopback ports and wait until ``ready`` returns. A free port
    can be taken by someone else before the server binds it, so a start that timed out on "address
    already in use" is tried again (three times in all); any other failure is reported with the log."""
    for _attempt in range(3):
        process = launch()
        try:
            ready()
            return
        except TimeoutError as exc:
            _stop_process(process)
            log = _tail(log_path)
            if "address already in use" not in log:
                raise ControlPlaneUnavailable(f"{exc}\n--- {log_path}:\n{log}") from exc
    raise ControlPlaneUnavailable(gave_up)


@dataclass
class Etcd:
    """One etcd member on free loopback ports, data in a temporary directory, no fsync."""

    binary: Path
    workdir: Path
    client_port: int = 0
    process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.client_port}"

    @property
    def log_path(self) -> Path:
        return self.workdir / "etcd.log"

    def start(self) -> None:
        self.workdir.mkdir(parents=True, exist_ok=True)

        def launch() -> subprocess.Popen[bytes]:
            self.client_port, peer_port = free_port(), free_port()
            self.process = _start_process(
                [
                    str(self.binary),
                    "--name=fleetsched-test",
                    f"--data-dir={self.workdir / 'data'}",
                    f"--listen-client-urls={self.url}",
                    f"--advertise-client-urls={self.url}",
                    f"--listen-peer-urls=http://127.0.0.1:{peer_port}",
                    f"--initial-advertise-peer-urls=http://127.0.0.1:{peer_port}",
                    f"--initial-cluster=fleetsched-test=http://127.0.0.1:{peer_port}",
                    "--unsafe-no-fsync=true",
                    "--log-level=warn",
                    "--quota-backend-bytes=8589934592",
                ],
                self.log_path,
            )
            return self.process

        def ready() -> None:
            wait_until(self._healthy, timeout=START_TIMEOUT, message="etcd did not become healthy")

        _start_on_free_ports(
            launch, ready, self.log_path, gave_up=f"etcd could not find free ports; see {self.log_path}"
        )

    def _healthy(self) -> bool:
        _check_running(self.process, "etcd", self.log_path)
        with urllib.request.urlopen(f"{self.url}/health", timeout=2) as response:
            return b'"health":"true"' in response.read()

    def stop(self) -> None:
        if self.process is not None:
            _stop_process(self.process)
            self.process = None


@dataclass
class APIServer:
    """One kube-apiserver; its cluster is the etcd keyspace under ``etcd_prefix``."""

    name: str
    binaries: Path
    workdir: Path
    pki: Pki
    etcd_url: str
    etcd_prefix: str
    port: int = 0
    process: subprocess.Popen[bytes] | None = None
    extra_args: tuple[str, ...] = ()
    # extra environment, e.g. GOGC for a benchmark's apiserver
    extra_env: Mapping[str, str] = field(default_factory=dict)
    _context: ssl.SSLContext | None = field(default=None, repr=False)

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    @property
    def kubeconfig(self) -> Path:
        return self.workdir / "kubeconfig"

    @property
    def log_path(self) -> Path:
        return self.workdir / "kube-apiserver.log"

    def argv(self) -> list[str]:
        return [
            str(self.binaries / "kube-apiserver"),
            f"--etcd-servers={self.etcd_url}",
            f"--etcd-prefix={self.etcd_prefix}",
            f"--secure-port={self.port}",
            "--bind-address=127.0.0.1",
            # Without it a loopback bind looks for the default route and may exit (envtest-notes §3).
            "--advertise-address=127.0.0.1",
            "--service-cluster-ip-range=10.0.0.0/24",
            "--allow-privileged=true",
            "--authorization-mode=RBAC",
            f"--cert-dir={self.workdir / 'certs'}",
            f"--tls-cert-file={self.pki.serving_cert}",
            f"--tls-private-key-file={self.pki.serving_key}",
            f"--client-ca-file={self.pki.client_ca}",
            f"--service-account-issuer=https://127.0.0.1:{self.port}/",
            f"--service-account-key-file={self.pki.service_account_public}",
            f"--service-account-signing-key-file={self.pki.service_account_private}",
            # No controller creates the `default` ServiceAccount unless kube-controller-manager runs.
            "--disable-admission-plugins=ServiceAccount",
            "--profiling=false",
            *self.extra_args,
        ]

    def start(self) -> None:
        self.workdir.mkdir(parents=True, exist_ok=True)

        def launch() -> subprocess.Popen[bytes]:
            self.port = free_port()
            self._write_kubeconfig()
            self.process = _start_process(self.argv(), self.log_path, self.extra_env)
            return self.process

        def ready() -> None:
            wait_until(
                self._ready, timeout=START_TIMEOUT, interval=0.25,
                message=f"kube-apiserver {self.name} did not become ready",
            )
            wait_until(
                lambda: self.get("/api/v1/namespaces/default") == 200, timeout=30,
                message=f"namespace default never appeared in {self.name}",
            )

        gave_up = f"kube-apiserver {self.name} could not find a free port; see {self.log_path}"
        _start_on_free_ports(launch, ready, self.log_path, gave_up=gave_up)

    def stop(self) -> None:
        if self.process is not None:
            _stop_process(self.process, grace=15)
            self.process = None

    def restart(self) -> None:
        """Stop and start again on the same port (for apiserver-restart fault tests)."""
        self.stop()
        self.process = _start_process(self.argv(), self.log_path, self.extra_env)
        wait_until(
            self._ready, timeout=START_TIMEOUT, interval=0.25, message=f"{self.name} did not come back"
        )

    def ssl_context(self) -> ssl.SSLContext:
        context = ssl.create_default_context(cafile=str(self.pki.serving_ca))
        context.load_cert_chain(str(self.pki.admin_cert), str(self.pki.admin_key))
        return context

    def get(self, path: str) -> int:
        """GET ``path`` as the admin user; returns the HTTP status (errors included)."""
        try:
            with urllib.request.urlopen(f"{self.url}{path}", timeout=5, context=self.ssl_context()) as r:
                return int(r.status)
        except urllib.error.HTTPError as exc:
            return int(exc.code)

    def request(self, method: str, path: str, body: object = None, *,
                content_type: str = "application/json") -> dict[str, object]:
        """One JSON request as the admin user; raises urllib.error.HTTPError on failure."""
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(f"{self.url}{path}", data=data, method=method)
        if data is not None:
            req.add_header("Content-Type", content_type)
        if self._context is None:
            self._context = self.ssl_context()
        with urllib.request.urlopen(req, timeout=30, context=self._context) as response:
            payload = response.read()
        return json.loads(payload) if payload else {}

    def _ready(self) -> bool:
        _check_running(self.process, f"kube-apiserver {self.name}", self.log_path)
        return self.get("/readyz") == 200

    def _write_kubeconfig(self) -> None:
        def b64(path: Path) -> str:
            return base64.b64encode(path.read_bytes()).decode()

        text = f"""apiVersion: v1
kind: Config
clusters:
- name: {self.name}
  cluster:
    server: {self.url}
    certificate-authority-data: {b64(self.pki.serving_ca)}
users:
- name: admin
  user:
    client-certificate-data: {b64(self.pki.admin_cert)}
    client-key-data: {b64(self.pki.admin_key)}
contexts:
- name: {self.name}
  context:
    cluster: {self.name}
    user: admin
current-context: {self.name}
"""
        self.kubeconfig.write_text(text)
        self.kubeconfig.chmod(0o600)

    # -- kubectl ---------------------------------------------------------------------------

    def kubectl(self, *args: str, input: str | None = None, check: bool = True, timeout: float = 120) -> str:
        """Run kubectl against this apiserver; returns stdout, raises with stderr on failure."""
        return kubectl(
            *args, kubeconfig=self.kubeconfig, binaries=self.binaries, input=input, check=check,
            timeout=timeout,
        )

    def apply(self, yaml_text: str, *, server_side: bool = False) -> str:
        """``kubectl apply -f -`` of YAML text."""
        args = ["apply", "-f", "-"]
        if server_side:
            args += ["--server-side", "--force-conflicts"]
        return self.kubectl(*args, input=yaml_text)

    def apply_crds(self, directory: Path = CRDS_DIR) -> list[str]:
        """Apply every CRD YAML file in ``directory`` and wait until all are Established."""
        files = sorted(p for p in directory.glob("*.y*ml")) if directory.is_dir() else []
        if not files:
            return []
        # Server-side: CRD schemas can exceed the client-side last-applied annotation limit.
        out = self.kubectl("apply", "--server-side", "--force-conflicts", "-f", str(directory))
        names = [line.split()[0].split("/", 1)[-1] for line in out.splitlines() if line.strip()]
        if names:
            self.kubectl(
                "wait", "--for=condition=Established", "--timeout=60s",
                *[f"crd/{n}" for n in names],
            )
        return names


def kubectl(
    *args: str,
    kubeconfig: Path,
    binaries: Path,
    input: str | None = None,
    check: bool = True,
    timeout: float = 120,
) -> str:
    """Run ``kubectl --kubeconfig=... ARGS``; returns stdout; raises RuntimeError with stderr."""
    env = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
    proc = subprocess.run(
        [str(binaries / "kubectl"), f"--kubeconfig={kubeconfig}", *args],
        input=input, capture_output=True, text=True, env=env, timeout=timeout, check=False,
    )
    if check and proc.returncode != 0:
        raise RuntimeError(f"kubectl {' '.join(args)} failed ({proc.returncode}): {proc.stderr.strip()}")
    return proc.stdout


@dataclass
class ControllerManager:
    """kube-controller-manager with only garbage collection and namespace deletion."""

    binaries: Path
    workdir: Path
    kubeconfig: Path
    process: subprocess.Popen[bytes] | None = None

    @property
    def log_path(self) -> Path:
        return self.workdir / "kube-controller-manager.log"

    def start(self) -> None:
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.process = _start_process(
            [
                str(self.binaries / CONTROLLER_MANAGER),
                f"--kubeconfig={self.kubeconfig}",
                "--leader-elect=false",
                "--controllers=garbage-collector-controller,namespace-controller",
                "--secure-port=0",
            ],
            self.log_path,
        )
        time.sleep(0.5)
        _check_running(self.process, "kube-controller-manager", self.log_path)

    def stop(self) -> None:
        if self.process is not None:
            _stop_process(self.process)
            self.process = None


@dataclass
class ControlPlane:
    """etcd + the main kube-apiserver (+ optional controller manager) + any member apiservers."""

    binaries: Path
    workdir: Path
    etcd: Etcd
    pki: Pki
    apiserver: APIServer
    controller_manager: ControllerManager | None = None
    members: dict[str, APIServer] = field(default_factory=dict)
    _owns_workdir: bool = False

    @classmethod
    def start(
        cls,
        *,
        workdir: Path | None = None,
        binaries: Path | None = None,
        with_controller_manager: bool = False,
        apply_crds: bool = True,
        apiserver_args: tuple[str, ...] = (),
        apiserver_env: Mapping[str, str] | None = None,
    ) -> ControlPlane:
        owns = workdir is None
        workdir = Path(tempfile.mkdtemp(prefix="fleetsched-cp-")) if workdir is None else workdir
        workdir.mkdir(parents=True, exist_ok=True)
        binaries = binaries or find_binaries()
        pki = Pki.create(workdir / "pki")
        etcd = Etcd(binary=binaries / "etcd", workdir=workdir / "etcd")
        apiserver = APIServer(
            name="karmada-host", binaries=binaries, workdir=workdir / "apiserver", pki=pki,
            etcd_url="", etcd_prefix="/registry", extra_args=apiserver_args,
            extra_env=dict(apiserver_env or {}),
        )
        plane = cls(binaries=binaries, workdir=workdir, etcd=etcd, pki=pki, apiserver=apiserver,
                    _owns_workdir=owns)
        try:
            etcd.start()
            apiserver.etcd_url = etcd.url
            apiserver.start()
            if apply_crds:
                apiserver.apply_crds()
            if with_controller_manager:
                if not (binaries / CONTROLLER_MANAGER).is_file():
                    raise ControlPlaneUnavailable(f"{binaries} has no {CONTROLLER_MANAGER}")
                plane.controller_manager = ControllerManager(
                    binaries=binaries, workdir=workdir / "controller-manager",
                    kubeconfig=apiserver.kubeconfig,
                )
                plane.controller_manager.start()
        except BaseException:
            plane.stop()
            raise
        return plane

    @property
    def kubeconfig(self) -> Path:
        return self.apiserver.kubeconfig

    def kubectl(self, *args: str, input: str | None = None, check: bool = True, timeout: float = 120) -> str:
        return self.apiserver.kubectl(*args, input=input, check=check, timeout=timeout)

    def apply(self, yaml_text: str, *, server_side: bool = False) -> str:
        return self.apiserver.apply(yaml_text, server_side=server_side)

    def add_apiserver(
        self, name: str, *, apply_crds: bool = False, extra_args: tuple[str, ...] = ()
    ) -> APIServer:
        """Start another kube-apiserver on the shared etcd under its own prefix.

        A member cluster (``apply_crds=False``) holds Nodes and Pods; an isolated control plane
        for one test (``apply_crds=True``) gets the CRDs too. ``extra_args`` are further
        kube-apiserver flags (e.g. ``tests.support.audit.AuditLog.args``).
        """
        if name in self.members or name == self.apiserver.name:
            raise ValueError(f"apiserver {name!r} already exists")
        unique = f"{name}-{os.urandom(3).hex()}"
        server = APIServer(
            name=name, binaries=self.binaries, workdir=self.workdir / "members" / unique, pki=self.pki,
            etcd_url=self.etcd.url, etcd_prefix=f"/{unique}", extra_args=extra_args,
        )
        self.members[name] = server
        try:
            server.start()
            if apply_crds:
                server.apply_crds()
        except BaseException:
            self.remove_apiserver(name)
            raise
        return server

    def remove_apiserver(self, name: str) -> None:
        server = self.members.pop(name, None)
        if server is not None:
            server.stop()

    def stop(self) -> None:
        for name in list(self.members):
            self.remove_apiserver(name)
        if self.controller_manager is not None:
            self.controller_manager.stop()
        self.apiserver.stop()
        self.etcd.stop()
        if self._owns_workdir and not os.environ.get("FLEETSCHED_KEEP_CONTROLPLANE_DIR"):
            shutil.rmtree(self.workdir, ignore_errors=True)


@contextlib.contextmanager
def running_control_plane(**kwargs: object) -> Iterator[ControlPlane]:
    plane = ControlPlane.start(**kwargs)  # type: ignore[arg-type]
    try:
        yield plane
    finally:
        plane.stop()


# ---------------------------------------------------------------------------------------------
# Command line: python -m tests.support.controlplane up


def _up(args: argparse.Namespace) -> int:
    workdir = Path(args.dir).resolve() if args.dir else None
    if workdir is not None and workdir.exists() and any(workdir.iterdir()):
        print(f"error: --dir {workdir} is not empty", file=sys.stderr)
        return 2
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    print("starting etcd and kube-apiserver (building binaries on the first run)...", file=sys.stderr)
    try:
        plane = ControlPlane.start(workdir=workdir, with_controller_manager=args.controller_manager)
    except ControlPlaneUnavailable as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    try:
        for i in range(args.members):
            member = plane.add_apiserver(f"member{i + 1}")
            print(f"member{i + 1}: export KUBECONFIG={member.kubeconfig}", flush=True)
        crds = len(list(CRDS_DIR.glob("*.y*ml"))) if CRDS_DIR.is_dir() else 0
        print(f"control plane up at {plane.apiserver.url} ({crds} CRD files applied from crds/)", flush=True)
        print(f"export KUBECONFIG={plane.kubeconfig}", flush=True)
        print(f"binaries: {plane.binaries}   logs: {plane.workdir}", flush=True)
        print("press Ctrl-C to stop", flush=True)
        while not stop.wait(1.0):
            if plane.apiserver.process is None or plane.apiserver.process.poll() is not None:
                print("kube-apiserver exited; stopping", file=sys.stderr)
                return 1
        return 0
    finally:
        print("stopping...", file=sys.stderr)
        plane.stop()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.support.controlplane", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    up = sub.add_parser("up", help="start etcd + kube-apiserver in the foreground; Ctrl-C stops them")
    up.add_argument("--members", type=int, default=0, help="extra member kube-apiservers to start")
    up.add_argument("--controller-manager", action="store_true",
                    help="also run kube-controller-manager (garbage collection, namespace deletion)")
    up.add_argument("--dir", help="working directory for data, certs and logs (default: a temp dir)")
    args = parser.parse_args(argv)
    return _up(args)


if __name__ == "__main__":
    sys.exit(main())
