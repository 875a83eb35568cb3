"""Credentials as client-go handles them, built on the official ``kubernetes`` package's loaders.

Where a connection comes from (``load_connection``), in client-go's (controller-runtime's) order:

1. ``--kubeconfig PATH``: that one file (it must exist and hold a config);
2. ``KUBECONFIG``: a list of files (``:``-separated), merged as kubectl merges them: files that do
   not exist or are empty are skipped, the first file to define a cluster, user or context by a
   name wins, and the first file to set ``current-context`` wins;
3. in a pod (``KUBERNETES_SERVICE_HOST``/``_PORT``): the ServiceAccount's token and CA;
4. ``~/.kube/config``.

Nothing found, or a file that cannot be used, raises ``CredentialsError`` with one line naming the
file and the field; the commands print it and exit 2.

The ``kubernetes`` package reads the files: ``KubeConfigMerger`` merges them, ``ConfigNode`` finds
the context, cluster and user, ``FileOrData`` turns ``*-data`` fields into files,
``InClusterConfigLoader`` checks the pod's environment and ``ExecProvider`` checks a credential
plugin's entry. What it leaves to its own urllib3 client, and what it does not do, is done here
(``Credentials``), as client-go does it:

* token files (the in-cluster token, a kubeconfig ``tokenFile``) are read again every 50 s (client-go's
  cached file token source: a one-minute period less ten seconds of leeway) and at once after a 401,
  in a thread, through the reader of every input (``fleetsched.regular_file``: a regular file of at
  most ``TOKEN_FILE_LIMIT`` bytes; a FIFO or a device is refused without being read);
* an exec plugin's credential (``client.authentication.k8s.io/v1``, or ``v1beta1``) is kept until
  its ``status.expirationTimestamp`` and the plugin is run again after that, and after a 401;
  ``provideClusterInfo`` hands it the cluster (``spec.cluster``), ``interactiveMode`` is checked;
  it runs in a session of its own and is bounded (``run_exec_plugin``): output past
  ``EXEC_STDOUT_LIMIT`` or no exit in ``EXEC_TIMEOUT`` kills its process group, and only the start of
  its standard error reaches a message;
* client certificate files are stat'ed every 10 s and again after a 401 or a 403; when their
  contents changed, a new TLS context is built (a pair that does not load yet, mid-rotation, keeps
  the old one) and the idle connections are dropped;
* ``tls-server-name`` is the name the server's certificate is checked against (and sent as SNI);
  ``proxy-url`` (``http://`` only, with optional user:password) tunnels every connection through
  the proxy with ``CONNECT``; a ``socks5://`` or ``https://`` proxy is refused at start-up.

One ``ssl.SSLContext`` serves the requests and the watches, client certificate included (also
with ``insecure-skip-tls-verify``). ``AuthHealth`` remembers answers that refuse the credentials
(401, and 403 from the authorizer) per verb and resource: three in a row without a success turn the
readiness probe false, with one log line naming the identity and the verb.

It must not know about bindings or scheduling.
"""

from __future__ import annotations

import asyncio
import base64
import datetime
import hashlib
import json
import os
import re
import signal
import socket
import ssl
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar
from urllib.parse import unquote, urlsplit

import structlog

from fleetsched.regular_file import FileRefused, read_regular

log = structlog.get_logger("fleetsched.kube.auth")

# client-go's cached file token source: a period of one minute, read again ten seconds before it ends.
TOKEN_FILE_PERIOD = 60.0
TOKEN_FILE_LEEWAY = 10.0
# How often the client certificate files are stat'ed (client-go reads them every 5 minutes; a stat
# costs microseconds, so a rotated certificate is in use within seconds rather than minutes).
CERT_CHECK_PERIOD = 10.0
# A credential plugin that has not answered in this time is killed (its process group, then reaped):
# the request fails, the next one runs it again.
EXEC_TIMEOUT = 60.0
# What a credential plugin may print: an ExecCredential with a certificate chain is a few kilobytes.
# More on standard output kills it (the credential fails); standard error is drained and only its
# first EXEC_STDERR_KEPT bytes are kept, of which EXEC_STDERR_SHOWN characters reach a message.
EXEC_STDOUT_LIMIT = 1 << 20
EXEC_STDERR_KEPT = 64 << 10
EXEC_STDERR_SHOWN = 512
# How long a killed plugin's pipes may stay open (held by something that left its session) before
# the plugin is taken as reaped without them.
EXEC_REAP_GRACE = 5.0
# A token file larger than this is refused: Go's HTTP server refuses request headers past 1 MiB.
TOKEN_FILE_LIMIT = 1 << 20
# Denials in a row of one verb on one resource that turn the readiness probe false.
DENIALS_TO_UNREADY = 3

EXEC_API_VERSIONS = ("client.authentication.k8s.io/v1", "client.authentication.k8s.io/v1beta1")
INTERACTIVE_MODES = ("Never", "IfAvailable", "Always")

P = TypeVar("P", bound=asyncio.BaseProtocol)


class CredentialsError(ConnectionError):
    """Credentials that cannot be loaded or used; the message is one line naming the source and field.

    A ``ConnectionError``: where it happens while requests are made (a plugin that fails), callers
    retry it as they retry an unreachable server."""


class KubeconfigError(CredentialsError):
    """``load_connection`` found no usable connection (the commands exit 2 with its one line)."""


@dataclass(frozen=True, slots=True)
class ExecConfig:
    """A kubeconfig user's ``exec`` credential plugin, as ``ExecProvider`` takes it."""

    command: str
    args: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    api_version: str = EXEC_API_VERSIONS[0]
    interactive_mode: str = "Never"
    # the kubeconfig's cluster entry when ``provideClusterInfo`` is true (JSON), else ""
    cluster_json: str = ""
    cwd: str = ""


@dataclass(frozen=True, slots=True)
class Connection:
    """Where the API is and how to authenticate; ``Credentials`` keeps what changes up to date."""

    server: str
    ca_path: str | None = None
    certificate_path: str | None = None
    private_key_path: str | None = None
    # a token written in the kubeconfig (static)
    token: str | None = None
    insecure: bool = False
    # a file holding the token, read again periodically (in-cluster ServiceAccount, ``tokenFile``)
    token_file: str | None = None
    exec_plugin: ExecConfig | None = None
    basic_auth: tuple[str, str] | None = None
    tls_server_name: str | None = None
    proxy_url: str | None = None
    # who this is, for log lines and the readiness probe: 'user "x" of kubeconfig /p'
    identity: str = ""


# ---- loading ---------------------------------------------------------------------------------------


def load_connection(
    kubeconfig: str | None,
    *,
    environ: Mapping[str, str] | None = None,
    token_path: str | None = None,
    ca_path: str | None = None,
    home: str | None = None,
) -> Connection:
    """The connection from ``kubeconfig``, ``KUBECONFIG``, the pod's ServiceAccount or ``~/.kube/config``
    (in that order; see the module docstring), its TLS files and token file checked once.
    ``CredentialsError`` (one line) when none is usable. ``environ``, ``token_path``, ``ca_path`` and
    ``home`` replace the process's (tests)."""
    try:
        connection = _find_connection(kubeconfig, environ=environ, token_path=token_path, ca_path=ca_path,
                                      home=home)
        Credentials(connection)  # the TLS files load, the token file holds a token
    except KubeconfigError:
        raise
    except CredentialsError as exc:
        raise KubeconfigError(str(exc)) from None
    return connection


def _find_connection(
    kubeconfig: str | None,
    *,
    environ: Mapping[str, str] | None,
    token_path: str | None,
    ca_path: str | None,
    home: str | None,
) -> Connection:
    env = os.environ if environ is None else environ
    if kubeconfig:
        path = os.path.expanduser(kubeconfig)
        where = f"--kubeconfig {kubeconfig}"
        if not os.path.isfile(path):
            raise CredentialsError(f"{where}: no such file")
        if _empty(path):
            raise CredentialsError(f"{where}: the file is empty")
        return _from_kubeconfig([path], where)
    listed = env.get("KUBECONFIG", "")
    if listed:
        paths = [os.path.expanduser(p) for p in listed.split(os.pathsep) if p]
        usable = [p for p in paths if os.path.isfile(p) and not _empty(p)]
        if not usable:
            raise CredentialsError(f"KUBECONFIG={listed}: none of its files exists or holds a config")
        return _from_kubeconfig(usable, f"KUBECONFIG={listed}")
    in_cluster_error = ""
    if env.get("KUBERNETES_SERVICE_HOST") or env.get("KUBERNETES_SERVICE_PORT"):
        try:
            return _in_cluster(env, token_path, ca_path)
        except CredentialsError as exc:
            in_cluster_error = str(exc)
    default = os.path.join(home if home is not None else os.path.expanduser("~"), ".kube", "config")
    if os.path.isfile(default) and not _empty(default):
        return _from_kubeconfig([default], default)
    if in_cluster_error:
        raise CredentialsError(in_cluster_error)
    raise CredentialsError(
        "no kubeconfig: pass --kubeconfig, set KUBECONFIG, or run in a pod "
        "(KUBERNETES_SERVICE_HOST is not set and ~/.kube/config does not exist)"
    )


def _empty(path: str) -> bool:
    try:
        with open(path, "rb") as f:
            return not f.read(4096).strip()
    except OSError:
        return False  # unreadable: reading it reports why


def _in_cluster(env: Mapping[str, str], token_path: str | None, ca_path: str | None) -> Connection:
    from kubernetes.client.configuration import Configuration
    from kubernetes.config.config_exception import ConfigException
    from kubernetes.config.incluster_config import (
        SERVICE_CERT_FILENAME,
        SERVICE_TOKEN_FILENAME,
        InClusterConfigLoader,
    )

    token_file = token_path or SERVICE_TOKEN_FILENAME
    if os.path.lexists(token_file):  # read as every token file is (a FIFO or device is refused)
        _read_token(token_file, "in-cluster config: token file")
    loader = InClusterConfigLoader(
        token_filename=token_file,
        cert_filename=ca_path or SERVICE_CERT_FILENAME,
        try_refresh_token=False,  # ``Credentials`` reads the file again
        environ=env,
    )
    configuration = Configuration()
    try:
        loader.load_and_set(configuration)
    except (ConfigException, OSError) as exc:
        raise CredentialsError(f"in-cluster config: {_one_line(exc)}") from None
    return Connection(
        server=str(configuration.host).rstrip("/"),
        ca_path=configuration.ssl_ca_cert,
        token_file=token_file,
        identity=f"the pod's ServiceAccount (token file {token_file})",
    )


def _from_kubeconfig(paths: Sequence[str], where: str) -> Connection:
    from kubernetes.config.config_exception import ConfigException
    from kubernetes.config.kube_config import KubeConfigMerger

    try:
        merged = KubeConfigMerger(os.pathsep.join(paths))
        if merged.config is None:
            raise CredentialsError(f"{where}: no configuration found")
        # kubectl's rule: the first file that sets current-context wins (the merger keeps the last)
        current = next(
            (c for p in merged.paths if (c := (merged.config_files.get(p) or {}).get("current-context"))), ""
        )
        return _from_merged(merged.config, current, where)
    except CredentialsError:
        raise
    except (ConfigException, OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise CredentialsError(f"{where}: {_one_line(exc)}") from None
    except Exception as exc:  # yaml.YAMLError and what else a malformed file raises in the loader
        raise CredentialsError(f"{where}: not a kubeconfig: {_one_line(exc)}") from None


def _from_merged(config: Any, current: str, where: str) -> Connection:
    if not current:
        raise CredentialsError(f"{where}: current-context is not set")
    context = config["contexts"].get_with_name(current)["context"]
    cluster_node = config["clusters"].get_with_name(context["cluster"])
    cluster = cluster_node["cluster"]
    user_name = context.safe_get("user") or ""
    user_entry = config["users"].get_with_name(user_name, safe=True) if user_name and config.safe_get(
        "users") else None
    user = user_entry["user"] if user_entry is not None and user_entry.safe_get("user") else None
    server = str(cluster.safe_get("server") or "").rstrip("/")
    if not server:
        raise CredentialsError(f"{where}: clusters[{context['cluster']}].server is not set")
    cluster_base = _base(cluster)
    insecure = bool(cluster.safe_get("insecure-skip-tls-verify"))
    ca = None
    if server.startswith("https") and not insecure:
        ca = _file(cluster, "certificate-authority", cluster_base, f"{where}: clusters[{context['cluster']}]")
    proxy = cluster.safe_get("proxy-url") or None
    if proxy:
        _proxy_parts(str(proxy), f"{where}: clusters[{context['cluster']}].proxy-url")
    identity = f'user "{user_name}" of {where} (context {current})'
    fields: dict[str, Any] = {}
    if user is not None:
        fields = _user_fields(user, user_name, cluster, where)
    return Connection(
        server=server,
        ca_path=ca,
        insecure=insecure,
        tls_server_name=cluster.safe_get("tls-server-name") or None,
        proxy_url=str(proxy) if proxy else None,
        identity=identity,
        **fields,
    )


def _user_fields(user: Any, name: str, cluster: Any, where: str) -> dict[str, Any]:
    base = _base(user)
    at = f"{where}: users[{name}]"
    methods = [m for m, keys in (
        ("token", ("token", "tokenFile")),
        ("basic auth", ("username", "password")),
        ("exec", ("exec",)),
        ("auth-provider", ("auth-provider",)),
    ) if any(user.safe_get(k) for k in keys)]
    if len(methods) > 1:
        found = ", ".join(methods)
        raise CredentialsError(f"{at}: more than one authentication method ({found}); one is allowed")
    if user.safe_get("auth-provider"):
        provider = user["auth-provider"].safe_get("name") or "?"
        raise CredentialsError(
            f"{at}.auth-provider: {provider!r} is not supported; use an exec credential plugin "
            "(e.g. kubelogin, gke-gcloud-auth-plugin, aws eks get-token)"
        )
    fields: dict[str, Any] = {}
    certificate = _file(user, "client-certificate", base, at)
    key = _file(user, "client-key", base, at)
    if bool(certificate) != bool(key):
        missing = "client-key" if certificate else "client-certificate"
        raise CredentialsError(f"{at}: {missing} is not set (a client certificate needs both)")
    if certificate:
        fields.update(certificate_path=certificate, private_key_path=key)
    token_file = user.safe_get("tokenFile")
    if token_file:
        path = os.path.normpath(os.path.join(base, str(token_file)))
        _read_token(path, f"{at}.tokenFile")  # exists and holds a token now
        fields["token_file"] = path  # client-go: the last value read from the file wins over token
    elif user.safe_get("token"):
        fields["token"] = str(user["token"]).strip()
    if user.safe_get("username") or user.safe_get("password"):
        fields["basic_auth"] = (str(user.safe_get("username") or ""), str(user.safe_get("password") or ""))
    if user.safe_get("exec"):
        fields["exec_plugin"] = _exec_config(user["exec"], base, cluster, f"{at}.exec")
    return fields


def _exec_config(node: Any, base: str, cluster: Any, at: str) -> ExecConfig:
    from kubernetes.config.exec_provider import ExecProvider

    try:
        provider = ExecProvider(node, base, cluster)  # checks command and apiVersion are there
    except Exception as exc:
        raise CredentialsError(f"{at}: {_one_line(exc)}") from None
    if provider.api_version not in EXEC_API_VERSIONS:
        raise CredentialsError(
            f"{at}.apiVersion: {provider.api_version!r} is not supported (use {EXEC_API_VERSIONS[0]})"
        )
    mode = node.safe_get("interactiveMode") or ""
    if not mode:
        if provider.api_version == EXEC_API_VERSIONS[0]:
            raise CredentialsError(f"{at}.interactiveMode: must be set for {provider.api_version}")
        mode = "IfAvailable"  # v1beta1's default
    if mode not in INTERACTIVE_MODES:
        raise CredentialsError(f"{at}.interactiveMode: {mode!r} is not one of {', '.join(INTERACTIVE_MODES)}")
    if mode == "Always" and not sys.stdin.isatty():
        raise CredentialsError(f"{at}.interactiveMode: Always needs a terminal on standard input")
    env = tuple((str(e["name"]), str(e["value"])) for e in (node.safe_get("env") or ()))
    cluster_json = ""
    if node.safe_get("provideClusterInfo"):
        cluster_json = json.dumps(_cluster_info(cluster, base), sort_keys=True)
    return ExecConfig(
        command=str(provider.args[0]),
        args=tuple(str(a) for a in provider.args[1:]),
        env=env,
        api_version=provider.api_version,
        interactive_mode=mode,
        cluster_json=cluster_json,
        cwd=base,
    )


def _cluster_info(cluster: Any, base: str) -> dict[str, Any]:
    """``spec.cluster`` of an ExecCredential: the kubeconfig's cluster in the API's field names."""
    from kubernetes.config.kube_config import FileOrData

    info: dict[str, Any] = {"server": cluster["server"]}
    ca = FileOrData(cluster, "certificate-authority", file_base_path=base).as_data()
    if ca:
        info["certificate-authority-data"] = ca  # base64, as the API's []byte field is written
    for key in ("tls-server-name", "insecure-skip-tls-verify", "proxy-url", "disable-compression"):
        if cluster.safe_get(key) is not None:
            info[key] = cluster[key]
    for extension in cluster.safe_get("extensions") or ():
        if extension.get("name") == "client.authentication.k8s.io/exec":
            info["config"] = extension.get("extension")
    return info


def _file(node: Any, key: str, base: str, at: str) -> str | None:
    """``key`` (a path, relative to the file that says it) or ``key-data`` (written to a private file)."""
    from kubernetes.config.config_exception import ConfigException
    from kubernetes.config.kube_config import FileOrData

    try:
        path: str | None = FileOrData(node, key, file_base_path=base).as_file()
    except (ConfigException, ValueError, OSError) as exc:
        raise CredentialsError(f"{at}.{key}: {_one_line(exc)}") from None
    return path


def _base(node: Any) -> str:
    path = getattr(node, "path", None)
    return os.path.dirname(os.path.abspath(path)) if path else ""


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__


def _read_token(path: str, what: str) -> str:
    """The token in the file at ``path``: a regular file of at most ``TOKEN_FILE_LIMIT`` bytes (a FIFO
    would block the read, ``/dev/zero`` never end), UTF-8, not empty."""
    try:
        data = read_regular(path, limit=TOKEN_FILE_LIMIT, what="token file")
    except FileRefused as exc:
        raise CredentialsError(f"{what} {path}: {exc.detail}") from None
    try:
        token = data.decode("utf-8").strip()
    except UnicodeDecodeError:
        raise CredentialsError(f"{what} {path}: not UTF-8 text") from None
    if not token:
        raise CredentialsError(f"{what} {path}: the file is empty")
    return token


def _proxy_parts(url: str, what: str) -> tuple[str, int, str | None]:
    """(host, port, Proxy-Authorization value) of an ``http://`` proxy URL."""
    parts = urlsplit(url)
    if parts.scheme != "http":
        scheme = parts.scheme or "no"
        raise CredentialsError(f"{what}: {scheme} scheme is not supported (use an http:// proxy)")
    if not parts.hostname:
        raise CredentialsError(f"{what}: {url!r} names no host")
    try:
        port = parts.port or 80
    except ValueError:
        raise CredentialsError(f"{what}: {url!r} has an invalid port") from None
    authorization = None
    if parts.username is not None:
        pair = f"{unquote(parts.username)}:{unquote(parts.password or '')}".encode()
        authorization = "Basic " + base64.b64encode(pair).decode()
    return parts.hostname, port, authorization


# ---- health -----------------------------------------------------------------------------------------

# The authorizer's refusal (apiserver responsewriters: ``User "x" cannot <verb> resource ...``); other
# 403s (admission webhooks, a terminating namespace) are about the object, not the credentials.
_AUTHZ_DENIED = re.compile(r'User "[^"]*" cannot ')
_NAMESPACE_SEGMENTS = 2


def describe(method: str, path: str, *, watch: bool = False) -> tuple[str, str]:
    """(verb, resource) of a request, as RBAC names them: ``("update", "leases.coordination.k8s.io")``."""
    parts = [p for p in path.partition("?")[0].split("/") if p]
    if parts[:1] == ["api"]:
        group, rest = "", parts[2:]
    elif parts[:1] == ["apis"]:
        group, rest = (parts[1] if len(parts) > 1 else ""), parts[3:]
    else:
        return method.lower(), path.partition("?")[0]
    if len(rest) >= _NAMESPACE_SEGMENTS + 1 and rest[0] == "namespaces":
        rest = rest[_NAMESPACE_SEGMENTS:]
    plural = rest[0] if rest else ""
    named = len(rest) > 1
    sub = f"/{rest[2]}" if len(rest) > 2 else ""
    verbs = {"POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}
    verb = "watch" if watch else verbs.get(method, "get" if named else "list")
    return verb, f"{plural}{'.' + group if group else ''}{sub}"


@dataclass
class _Denied:
    count: int
    status: int
    message: str


@dataclass
class AuthHealth:
    """Answers that refused the credentials, per (verb, resource); see the module docstring."""

    identity: str
    _denied: dict[tuple[str, str], _Denied] = field(default_factory=dict)
    _reported: set[tuple[str, str]] = field(default_factory=set)

    def observe(self, status: int, verb: str, resource: str, body: bytes = b"") -> None:
        key = (verb, resource)
        if status == 401 or (status == 403 and _AUTHZ_DENIED.search(_message(body))):
            entry = self._denied.get(key)
            if entry is None:
                entry = self._denied[key] = _Denied(0, status, "")
            entry.count += 1
            entry.status = status
            entry.message = _message(body) or ("Unauthorized" if status == 401 else "Forbidden")
            if entry.count >= DENIALS_TO_UNREADY and key not in self._reported:
                self._reported.add(key)
                log.error("credentials_refused", identity=self.identity, verb=verb, resource=resource,
                          status=status, message=entry.message, times=entry.count)
            return
        if self._denied.pop(key, None) is not None and key in self._reported:
            self._reported.discard(key)
            log.info("credentials_accepted_again", identity=self.identity, verb=verb, resource=resource)

    @property
    def refusing(self) -> bool:
        """Some (verb, resource) has been refused since its last accepted answer."""
        return bool(self._denied)

    def problem(self) -> str | None:
        """Why the readiness probe fails, or None."""
        for (verb, resource), entry in self._denied.items():
            if entry.count >= DENIALS_TO_UNREADY:
                answer = "401 Unauthorized" if entry.status == 401 else "403 Forbidden"
                return (f"credentials refused: {verb} {resource} answered {answer} {entry.count} times "
                        f"for {self.identity}: {entry.message}")
        return None


def _message(body: bytes) -> str:
    if body[:1] != b"{":
        return body[:300].decode("utf-8", "replace").strip()
    try:
        payload = json.loads(body)
    except ValueError:
        return ""
    return str(payload.get("message") or "")[:300] if isinstance(payload, dict) else ""


# ---- the live credentials ---------------------------------------------------------------------------


@dataclass
class _Stamp:
    """What a file looked like when last read (inode, size, mtime) and its contents' digest."""

    stat: tuple[int, int, int] = (0, 0, 0)
    digest: str = ""


def _stat(path: str) -> tuple[int, int, int]:
    st = os.stat(path)
    return st.st_ino, st.st_size, st.st_mtime_ns


class Credentials:
    """The credentials of one ``Connection`` kept current: the Authorization header, the TLS context
    and the dialer (proxy, server name). Use it from one event loop."""

    def __init__(
        self,
        connection: Connection,
        *,
        clock: Callable[[], float] = time.monotonic,
        wall: Callable[[], float] = time.time,
    ) -> None:
        self.connection = connection
        self.health = AuthHealth(connection.identity or f"the credentials for {connection.server}")
        self._clock = clock
        self._wall = wall
        self._https = connection.server.startswith("https")
        self._proxy = _proxy_parts(connection.proxy_url, "proxy-url") if connection.proxy_url else None
        # the bearer token in use and when it must be read (token file) or made (plugin) again
        self._token: str | None = connection.token
        self._token_due = 0.0 if (connection.token_file or connection.exec_plugin) else float("inf")
        self._exec_expiry: float | None = None
        self._exec_certificate: tuple[str, str] | None = None
        self._exec_lock: asyncio.Lock | None = None
        self._token_lock: asyncio.Lock | None = None
        self._cert_stamps: dict[str, _Stamp] = {}
        self._cert_checked = clock()
        self._context: ssl.SSLContext | None = None
        # bumped whenever the TLS context changes: pooled connections made before are dropped
        self.generation = 0
        if self._https:
            try:
                self._context = self._build_context()
            except (ssl.SSLError, OSError, ValueError) as exc:
                files = ", ".join(filter(None, (connection.ca_path, *(self._certificate_files() or ()))))
                raise CredentialsError(f"TLS files ({files}) cannot be loaded: {_one_line(exc)}") from None
            self._cert_stamps = self._stamps()
        if connection.token_file:
            self._read_token_file()

    # -- what a request uses -------------------------------------------------------------------------

    @property
    def identity(self) -> str:
        return self.health.identity

    def ssl_context(self) -> ssl.SSLContext | None:
        """The TLS context for a new connection (None for http://); client certificates checked first."""
        if self._https and self._clock() - self._cert_checked >= CERT_CHECK_PERIOD:
            self.check_certificates()
        return self._context

    @property
    def server_hostname(self) -> str | None:
        return self.connection.tls_server_name

    async def authorization(self) -> str | None:
        """The Authorization header's value now, reading the token file or running the plugin when due."""
        connection = self.connection
        if connection.exec_plugin is not None:
            if self._exec_expiry is None or self._wall() >= self._exec_expiry:
                await self._run_plugin()
        elif connection.token_file and self._clock() >= self._token_due:
            await self._reread_token_file()
        if self._token:
            return f"Bearer {self._token}"
        if connection.basic_auth is not None:
            pair = ":".join(connection.basic_auth).encode()
            return "Basic " + base64.b64encode(pair).decode()
        return None

    async def renew(self, status: int, used: str | None) -> bool:
        """After a 401 (token files read and plugins run again, certificates checked) or a 403
        (certificates checked, token files read again): whether the credentials changed, i.e. whether
        sending the request once more can help."""
        generation = self.generation
        self.check_certificates()
        if self.connection.exec_plugin is not None and status == 401:
            if used == await self.authorization():  # not renewed meanwhile by another request
                self._exec_expiry = None
                await self._run_plugin()
        elif self.connection.token_file:
            await self._reread_token_file()
        return self.generation != generation or (await self.authorization()) != used

    # -- the pieces ----------------------------------------------------------------------------------

    def _read_token_file(self) -> None:
        """At start-up: the token file must hold a token (bounded and non-blocking, see ``_read_token``)."""
        path = self.connection.token_file
        assert path is not None
        self._use_token(_read_token(path, "token file"))

    async def _reread_token_file(self) -> None:
        """The token file read again, in a thread (the event loop keeps serving health and the Lease
        while a slow file system answers); one read at a time."""
        path = self.connection.token_file
        assert path is not None
        if self._token_lock is None:
            self._token_lock = asyncio.Lock()
        due = self._token_due
        async with self._token_lock:
            if self._token_due != due:
                return  # read by another request while this one waited
            try:
                token = await asyncio.to_thread(_read_token, path, "token file")
            except CredentialsError as exc:
                if self._token is None:
                    raise
                # client-go keeps the last token it read when the file cannot be read
                log.warning("token_file_unreadable", error=str(exc), keeps="the token read before")
                token = self._token
            self._use_token(token)

    def _use_token(self, token: str) -> None:
        if token != self._token and self._token is not None:
            log.info("token_file_changed", path=self.connection.token_file)
        self._token = token
        self._token_due = self._clock() + TOKEN_FILE_PERIOD - TOKEN_FILE_LEEWAY

    async def _run_plugin(self) -> None:
        if self._exec_lock is None:
            self._exec_lock = asyncio.Lock()
        async with self._exec_lock:
            if self._exec_expiry is not None and self._wall() < self._exec_expiry:
                return  # another request ran it while this one waited
            status = await self._exec()
            token = status.get("token")
            certificate, key = status.get("clientCertificateData"), status.get("clientKeyData")
            if not token and not (certificate and key):
                raise CredentialsError(
                    f"exec plugin {self.connection.exec_plugin.command!r}: "  # type: ignore[union-attr]
                    "its status has neither token nor clientCertificateData and clientKeyData"
                )
            expiry = status.get("expirationTimestamp")
            self._exec_expiry = _parse_time(str(expiry)) if expiry else float("inf")
            self._token = str(token) if token else None
            if certificate and key:
                self._set_exec_certificate(str(certificate), str(key))
            log.info("exec_plugin_ran", command=self.connection.exec_plugin.command,  # type: ignore[union-attr]
                     expires=str(expiry or "never"))

    async def _exec(self) -> dict[str, Any]:
        """Run the plugin and return its ExecCredential's status (``run_exec_plugin``)."""
        config = self.connection.exec_plugin
        assert config is not None
        try:
            return await run_exec_plugin(config)
        except CredentialsError as exc:
            raise CredentialsError(f"exec plugin {config.command!r}: {exc}") from None

    def _set_exec_certificate(self, certificate: str, key: str) -> None:
        from kubernetes.config.kube_config import FileOrData

        data = {"clientCertificateData": certificate, "clientKeyData": key}
        paths = tuple(
            FileOrData(data, None, data_key_name=name, base64_file_content=False).as_file()
            for name in ("clientCertificateData", "clientKeyData")
        )
        if paths != self._exec_certificate:
            self._exec_certificate = paths
            self._replace_context()

    def expiration(self) -> datetime.datetime | None:
        """When a client that caches the credentials itself (kopf) must ask again: a plugin's
        expiry. None otherwise: such a client asks again after a 401, when token files are read
        again (kopf closes its session, and with it its watches, when credentials expire, so a
        token file's period would cost a relist every minute)."""
        if self._exec_expiry is not None and self._exec_expiry != float("inf"):
            return datetime.datetime.fromtimestamp(self._exec_expiry, datetime.UTC)
        return None

    def certificate_files(self) -> tuple[str, str] | None:
        """The client certificate and key files in use (a plugin's or the kubeconfig's), if any."""
        return self._certificate_files()

    def _certificate_files(self) -> tuple[str, str] | None:
        if self._exec_certificate is not None:
            return self._exec_certificate
        connection = self.connection
        if connection.certificate_path and connection.private_key_path:
            return connection.certificate_path, connection.private_key_path
        return None

    def _build_context(self) -> ssl.SSLContext:
        connection = self.connection
        if connection.insecure:  # no trust store to load: nothing is verified
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
        else:
            context = ssl.create_default_context(cafile=connection.ca_path)
        files = self._certificate_files()
        if files is not None:
            context.load_cert_chain(*files)
        return context

    def _stamps(self) -> dict[str, _Stamp]:
        files = self._certificate_files() if self._exec_certificate is None else None
        stamps = {}
        for path in files or ():
            try:
                with open(path, "rb") as f:
                    stamps[path] = _Stamp(_stat(path), hashlib.sha256(f.read()).hexdigest())
            except OSError:
                stamps[path] = _Stamp()
        return stamps

    def check_certificates(self) -> bool:
        """Reload the client certificate when its files changed; whether the TLS context changed."""
        self._cert_checked = self._clock()
        if not self._https or self._exec_certificate is not None or not self._cert_stamps:
            return False
        try:
            if all(_stat(p) == s.stat for p, s in self._cert_stamps.items()):
                return False
        except OSError:
            return False  # mid-rotation (a file renamed away): the next check sees the new one
        stamps = self._stamps()
        if [s.digest for s in stamps.values()] == [s.digest for s in self._cert_stamps.values()]:
            self._cert_stamps = stamps  # touched, not changed
            return False
        try:
            self._replace_context()
        except (ssl.SSLError, OSError) as exc:
            # a certificate written before its key (or the other way round): try again next time
            log.warning("client_certificate_not_loaded", error=_one_line(exc), keeps="the previous one")
            return False
        self._cert_stamps = stamps
        log.info("client_certificate_reloaded", certificate=self._certificate_files()[0])  # type: ignore[index]
        return True

    def _replace_context(self) -> None:
        self._context = self._build_context()
        self.generation += 1

    # -- connecting ----------------------------------------------------------------------------------

    async def dial(
        self, factory: Callable[[], P], host: str, port: int
    ) -> tuple[asyncio.Transport, P]:
        """A connection to ``host:port`` for ``factory``'s protocol: through the proxy when there is
        one, TLS with the current context and ``tls-server-name``."""
        loop = asyncio.get_running_loop()
        context = self.ssl_context()
        server_hostname = (self.connection.tls_server_name or host) if context is not None else None
        if self._proxy is None:
            return await loop.create_connection(  # type: ignore[return-value]
                factory, host, port, ssl=context, server_hostname=server_hostname
            )
        sock = await self._tunnel(host, port)
        return await loop.create_connection(  # type: ignore[return-value]
            factory, sock=sock, ssl=context, server_hostname=server_hostname
        )

    async def _tunnel(self, host: str, port: int) -> socket.socket:
        """A socket connected to ``host:port`` through the proxy's ``CONNECT``."""
        assert self._proxy is not None
        proxy_host, proxy_port, authorization = self._proxy
        loop = asyncio.get_running_loop()
        infos = await loop.getaddrinfo(proxy_host, proxy_port, type=socket.SOCK_STREAM)
        if not infos:
            raise ConnectionError(f"proxy {proxy_host}:{proxy_port}: no address")
        family, kind, proto, _, address = infos[0]
        sock = socket.socket(family, kind, proto)
        try:
            sock.setblocking(False)
            await loop.sock_connect(sock, address)
            target = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
            head = f"CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n"
            if authorization:
                head += f"Proxy-Authorization: {authorization}\r\n"
            await loop.sock_sendall(sock, (head + "\r\n").encode("latin-1"))
            answer = b""
            while b"\r\n\r\n" not in answer:
                chunk = await loop.sock_recv(sock, 4096)
                if not chunk or len(answer) > 16384:
                    raise ConnectionError(f"proxy {proxy_host}:{proxy_port} closed or sent no end of head")
                answer += chunk
            status_line = answer.split(b"\r\n", 1)[0].decode("latin-1")
            status = status_line.split(" ")
            if len(status) < 2 or status[1] != "200":
                refused = f"proxy {proxy_host}:{proxy_port} refused CONNECT {target}"
                raise ConnectionError(f"{refused}: {status_line}")
            return sock
        except BaseException:
            sock.close()
            raise


async def run_exec_plugin(
    config: ExecConfig,
    *,
    timeout: float = EXEC_TIMEOUT,
    stdout_limit: int = EXEC_STDOUT_LIMIT,
    interactive: bool | None = None,
) -> dict[str, Any]:
    """Run a credential plugin as client-go does (``KUBERNETES_EXEC_INFO``, the kubeconfig's env and
    directory) and return its ExecCredential's ``status``; ``CredentialsError`` (one line) otherwise.

    Bounded as every input is: more than ``stdout_limit`` bytes on standard output, or no exit within
    ``timeout`` seconds, kills the plugin's process group (it runs in a session of its own, so what it
    started goes too) and reaps it; standard error is drained, its first ``EXEC_STDERR_KEPT`` bytes
    kept and at most ``EXEC_STDERR_SHOWN`` characters of them quoted in the message. ``interactive``
    (default: standard output is a terminal, ``ExecProvider``'s rule) passes standard input and
    standard error through to the plugin."""
    if interactive is None:
        interactive = hasattr(sys.stdout, "isatty") and sys.stdout.isatty()
    spec: dict[str, Any] = {"interactive": interactive}
    if config.cluster_json:
        spec["cluster"] = json.loads(config.cluster_json)
    env = dict(os.environ)
    env.update(config.env)
    env["KUBERNETES_EXEC_INFO"] = json.dumps(
        {"apiVersion": config.api_version, "kind": "ExecCredential", "spec": spec}
    )
    try:
        process = await asyncio.create_subprocess_exec(
            config.command, *config.args,
            stdin=None if interactive else asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=None if interactive else asyncio.subprocess.PIPE,
            cwd=config.cwd or None, env=env, start_new_session=True,
        )
    except OSError as exc:
        raise CredentialsError(_one_line(exc)) from None
    finished = False
    try:
        out, err, overflow = await asyncio.wait_for(_collect(process, stdout_limit), timeout)
        finished = not overflow
    except TimeoutError:
        raise CredentialsError(f"no answer in {timeout:g} s (killed)") from None
    finally:
        if not finished:  # late, too much output, or the request was cancelled
            await _kill(process)
    if overflow:
        raise CredentialsError(f"printed more than {stdout_limit} bytes on standard output (killed)")
    if process.returncode != 0:
        message = f"exec: process returned {process.returncode}"
        shown = _stderr_excerpt(err)
        raise CredentialsError(f"{message}. {shown}" if shown else message)
    return _exec_status(out, config.api_version)


async def _collect(process: asyncio.subprocess.Process, stdout_limit: int) -> tuple[bytes, bytes, bool]:
    """(standard output, the kept start of standard error, whether output passed ``stdout_limit``)
    once the plugin has closed both and exited, or as soon as its output passes the limit."""

    async def drain(stream: asyncio.StreamReader | None, keep: int, stop: bool) -> tuple[bytes, bool]:
        if stream is None:
            return b"", False
        kept = bytearray()
        while chunk := await stream.read(65536):
            room = keep - len(kept)
            if len(chunk) > room and stop:
                return bytes(kept), True
            kept += chunk[: max(room, 0)]
        return bytes(kept), False

    out_task = asyncio.ensure_future(drain(process.stdout, stdout_limit, True))
    err_task = asyncio.ensure_future(drain(process.stderr, EXEC_STDERR_KEPT, False))
    try:
        out, overflow = await out_task
        if overflow:
            return out, b"", True
        err, _ = await err_task
        await process.wait()
        return out, err, False
    finally:
        for task in (out_task, err_task):
            task.cancel()
        await asyncio.gather(out_task, err_task, return_exceptions=True)


async def _kill(process: asyncio.subprocess.Process) -> None:
    """Kill the plugin's process group (the plugin and whatever it started that still holds its
    pipes or runs past it) and reap the plugin."""
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    except PermissionError:  # not ours any more: the plugin itself only
        if process.returncode is None:
            process.kill()
    # ``Process.wait()`` returns only once the pipes are closed too, and a pipe whose reader stopped
    # at the output limit is paused: it would never see its end. Read what is left and drop it (the
    # writers are dead, so this is at most a pipe buffer), and stop waiting for the pipes after
    # EXEC_REAP_GRACE: something that left the plugin's session may still hold them. The plugin itself
    # is reaped by the child watcher whatever the pipes do.
    drains = [asyncio.ensure_future(_discard(s)) for s in (process.stdout, process.stderr) if s]
    try:
        await asyncio.wait_for(process.wait(), EXEC_REAP_GRACE)
    except TimeoutError:
        while process.returncode is None:
            await asyncio.sleep(0.01)
    finally:
        for task in drains:
            task.cancel()
        await asyncio.gather(*drains, return_exceptions=True)


async def _discard(stream: asyncio.StreamReader) -> None:
    while await stream.read(65536):
        pass


def _stderr_excerpt(err: bytes) -> str:
    """The start of a plugin's standard error on one line, at most ``EXEC_STDERR_SHOWN`` characters."""
    text = " ".join(err.decode("utf-8", "replace").split())
    if len(text) > EXEC_STDERR_SHOWN:
        more = "(more not shown)" if len(err) >= EXEC_STDERR_KEPT else f"({len(err)} bytes in all)"
        text = f"{text[:EXEC_STDERR_SHOWN]}... {more}"
    return text


def _exec_status(out: bytes, api_version: str) -> dict[str, Any]:
    """The ``status`` of the ExecCredential a plugin printed (``ExecProvider``'s checks and messages)."""
    try:
        data = json.loads(out)
    except ValueError as exc:
        raise CredentialsError(f"exec: failed to decode process output: {_one_line(exc)}") from None
    if not isinstance(data, dict):
        raise CredentialsError("exec: malformed response: not an object")
    for key in ("apiVersion", "kind", "status"):
        if key not in data:
            raise CredentialsError(f"exec: malformed response. missing key '{key}'")
    if data["apiVersion"] != api_version:
        raise CredentialsError(f"exec: plugin api version {data['apiVersion']} does not match {api_version}")
    status = data["status"]
    if not isinstance(status, dict):
        raise CredentialsError("exec: status is not an object")
    return status


def _parse_time(text: str) -> float:
    from kubernetes.config.dateutil import parse_rfc3339

    try:
        moment = parse_rfc3339(text)
    except Exception:
        raise CredentialsError(f"exec plugin: expirationTimestamp {text!r} is not an RFC 3339 time") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=datetime.UTC)
    return moment.timestamp()
