"""``fleetsched webhook``: serve the admission webhook over HTTPS.

Flags and defaults follow karmada-webhook's (cmd/webhook/app/options). ``--port`` is accepted as the
short form of ``--secure-port``. The metrics and health-probe listeners are best effort: if
their port is taken the admission server still starts, because that is what the API server
depends on.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import signal
import sys
from pathlib import Path

import structlog
from aiohttp import web

from fleetsched import flags, karmada_flags
from fleetsched.flags import MULTIPLE_POD_TEMPLATES_SCHEDULING, gate_enabled, parse_bind_address
from fleetsched.webhook import review, server

log = structlog.get_logger("fleetsched.webhook")

def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--bind-address", default="0.0.0.0", help="address to listen on (default 0.0.0.0)")
    parser.add_argument("--secure-port", "--port", dest="port", type=int, default=8443,
                        help="HTTPS port (default 8443)")
    parser.add_argument("--cert-dir", default="/tmp/k8s-webhook-server/serving-certs",
                        help="directory with the serving certificate and key")
    parser.add_argument("--tls-cert-file-name", default="tls.crt", help="certificate file in --cert-dir")
    parser.add_argument("--tls-private-key-file-name", default="tls.key", help="key file in --cert-dir")
    parser.add_argument("--tls-min-version", default="1.3", choices=sorted(server.TLS_VERSIONS),
                        help="minimum TLS version (default 1.3)")
    parser.add_argument("--metrics-bind-address", default=":8080",
                        help="HOST:PORT for Prometheus metrics over HTTP; 0 disables (default :8080)")
    parser.add_argument("--health-probe-bind-address", default=":8000",
                        help="HOST:PORT for /readyz and /healthz over HTTP; 0 disables (default :8000)")
    parser.add_argument("--kube-api-qps", type=float, default=40.0,
                        help="accepted for compatibility; the rules served here make no API calls")
    parser.add_argument("--kube-api-burst", type=int, default=60,
                        help="accepted for compatibility; the rules served here make no API calls")
    parser.add_argument("--kubeconfig", default="", help="accepted for compatibility (no API calls are made)")
    parser.add_argument("--feature-gates", default="",
                        help="Karmada's gates, Gate=true|false,...; MultiplePodTemplatesScheduling enables "
                             "the component-name checks of /validate-resourcebinding")
    parser.add_argument("--allow-no-execute-taint-policy", action="store_true",
                        help="accepted for compatibility (ClusterTaintPolicy is not served)")
    parser.add_argument("--cert-check-interval", type=float, default=10.0,
                        help="seconds between checks of the certificate files for rotation (default 10)")
    parser.add_argument("--client-ca-file", default="",
                        help="PEM CA bundle; when set, every HTTPS client (the API server) must present a "
                             "certificate it signed (default: no client authentication)")
    parser.add_argument("--header-timeout", type=_positive_float, default=5.0,
                        help="seconds for the TLS handshake and for a request's headers; a slower "
                             "connection is dropped (default 5)")
    parser.add_argument("--body-timeout", type=_positive_float, default=10.0,
                        help="seconds for a request's body after its headers (default 10)")
    parser.add_argument("--max-requests-in-flight", type=_positive_int, default=64,
                        help="admission requests answered at once, counted from the end of their body; more "
                             "are answered with code 429 at once (default 64)")
    parser.add_argument("--max-requests-reading", type=_positive_int, default=128,
                        help="request bodies being received at once; a body arriving for longer than "
                             "--slow-body-evict-after gives its slot to a new request (code 408), and when "
                             "none has, the new one is answered with code 429 (default 128)")
    parser.add_argument("--max-requests-reading-per-client", type=_positive_int, default=64,
                        help="of those, bodies from one client address; past it the oldest of that "
                             "client's gives way, as above (default 64)")
    parser.add_argument("--max-connections", type=_positive_int, default=256,
                        help="open connections, counted from the TCP accept; past it a new connection is "
                             "closed before the TLS handshake unless an older one gives way: the oldest one "
                             "older than --slow-body-evict-after that is not answering a request, of the "
                             "client with the most (default 256)")
    parser.add_argument("--max-connections-per-client", type=_positive_int, default=192,
                        help="of those, from one client address; past it that client's oldest gives way, "
                             "as above (default 192)")
    parser.add_argument("--slow-body-evict-after", type=_non_negative_float, default=1.0,
                        help="seconds after which a body still arriving gives its reading slot to a new "
                             "request when every slot is taken (default 1)")
    parser.add_argument("--readiness-saturation-window", type=_positive_float, default=5.0,
                        help="seconds of refusing requests for capacity with no slot freed after which "
                             "/readyz answers 503 (ready again when a slot is freed; default 5)")
    parser.add_argument("--max-large-requests-in-flight", type=_positive_int, default=2,
                        help=f"requests with a body over {server.LARGE_BODY_BYTES // 1024} KiB, from their "
                             "headers to their answer; more wait up to --large-request-wait, then get code "
                             "429 (default 2)")
    parser.add_argument("--large-request-wait", type=_non_negative_float, default=1.0,
                        help="seconds a large request waits for a slot (default 1)")
    parser.add_argument("--max-review-memory", type=_positive_int, default=review.MAX_REVIEW_MEMORY,
                        help="bytes one request may take to decode, estimated from the body before it is "
                             f"parsed; a body over it is answered with code 413 (default "
                             f"{review.MAX_REVIEW_MEMORY}, 3 x the 7 MiB body limit)")
    parser.add_argument("--log-level", default="info", choices=("debug", "info", "warning", "error"))
    karmada_flags.add_arguments(parser, flags=("--v", "--enable-pprof", "--profiling-bind-address"))


def _number(kind: type[float] | type[int], text: str, *, zero_ok: bool) -> float:
    try:
        value = kind(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if value < 0 or (value == 0 and not zero_ok) or value != value:
        raise argparse.ArgumentTypeError(f"must be {'>= 0' if zero_ok else '> 0'}, got {text}")
    return value


def _positive_float(text: str) -> float:
    return float(_number(float, text, zero_ok=False))


def _non_negative_float(text: str) -> float:
    return float(_number(float, text, zero_ok=True))


def _positive_int(text: str) -> int:
    return int(_number(int, text, zero_ok=False))


def parse_feature_gates(text: str) -> dict[str, bool]:
    """Karmada's gates, all accepted as by Karmada's webhook; MultiplePodTemplatesScheduling changes
    what is admitted here."""
    try:
        return flags.parse_feature_gates(text)
    except ValueError as exc:
        raise ValueError(f"--feature-gates: {exc}") from None


def _configure_logging(level: str) -> None:
    # Records from aiohttp and asyncio (a TLS error, a handler bug) are JSON lines too: one line
    # each, with any traceback folded into the "exception" field.
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(structlog.stdlib.ProcessorFormatter(
        foreign_pre_chain=[structlog.stdlib.add_log_level, structlog.stdlib.add_logger_name,
                           structlog.processors.TimeStamper(fmt="iso", utc=True)],
        processors=[structlog.stdlib.ProcessorFormatter.remove_processors_meta,
                    structlog.processors.format_exc_info, structlog.processors.JSONRenderer()]))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.format_exc_info,
            structlog.processors.JSONRenderer(),
        ],
        wrapper_class=structlog.make_filtering_bound_logger(getattr(logging, level.upper())),
        logger_factory=structlog.PrintLoggerFactory(sys.stderr),
    )


def _cannot_listen(flags: str, host: str, port: int, exc: OSError) -> OSError:
    why = os.strerror(exc.errno) if exc.errno else str(exc)
    return OSError(f"{flags} {host or '0.0.0.0'}:{port}: cannot listen: {why}")


async def serve(args: argparse.Namespace, *, stop: asyncio.Event | None = None) -> int:
    cert_dir = Path(args.cert_dir)
    gates = parse_feature_gates(args.feature_gates)
    config = server.ServerConfig(
        cert_file=cert_dir / args.tls_cert_file_name,
        key_file=cert_dir / args.tls_private_key_file_name,
        tls_min_version=args.tls_min_version,
        settings=review.Settings(
            multiple_pod_templates=gate_enabled(gates, MULTIPLE_POD_TEMPLATES_SCHEDULING),
            max_review_memory=args.max_review_memory,
        ),
        limits=server.Limits(header_timeout=args.header_timeout, body_timeout=args.body_timeout,
                             max_in_flight=args.max_requests_in_flight,
                             max_large_in_flight=args.max_large_requests_in_flight,
                             large_wait=args.large_request_wait,
                             max_reading=args.max_requests_reading,
                             max_reading_per_client=args.max_requests_reading_per_client,
                             evict_after=args.slow_body_evict_after,
                             max_connections=args.max_connections,
                             max_connections_per_client=args.max_connections_per_client,
                             saturation_window=args.readiness_saturation_window),
        client_ca_file=Path(args.client_ca_file) if args.client_ca_file else None,
    )
    metrics_address = parse_bind_address(args.metrics_bind_address)
    probe_address = parse_bind_address(args.health_probe_bind_address)
    context = server.ssl_context(config)
    server.tune_allocator()
    metrics = server.Metrics()
    runners: list[web.AppRunner] = []

    main_app = server.build_app(config, metrics)
    main_runner = web.AppRunner(main_app, access_log=None, handle_signals=False)
    await main_runner.setup()
    runners.append(main_runner)
    try:
        listener = await server.serve_https(main_runner, args.bind_address, args.port, context, config,
                                            metrics)
    except OSError as exc:
        await main_runner.cleanup()
        raise _cannot_listen("--bind-address and --secure-port", args.bind_address, args.port, exc) from None
    log.info("webhook_serving", address=args.bind_address, port=args.port, cert_dir=str(cert_dir),
             tls_min_version=args.tls_min_version, client_ca_file=args.client_ca_file or None)

    extra: dict[tuple[str, int], tuple[bool, bool]] = {}
    if metrics_address is not None:
        extra[metrics_address] = (True, False)
    if probe_address is not None:
        has_metrics, _ = extra.get(probe_address, (False, False))
        extra[probe_address] = (has_metrics, True)
    for (host, port), (with_metrics, with_health) in extra.items():
        probe_app = server.build_probe_app(metrics if with_metrics else None, health=with_health,
                                           readiness=main_app["readiness"])
        runner = web.AppRunner(probe_app, access_log=None, handle_signals=False)
        await runner.setup()
        runners.append(runner)
        try:
            await web.TCPSite(runner, host, port).start()
            log.info("probe_serving", address=host, port=port, metrics=with_metrics, health=with_health)
        except OSError as exc:  # a start-up failure like a taken --secure-port: one line, exit 2
            listener.close()
            for started in reversed(runners):
                await started.cleanup()
            flags = " and ".join(f for f, on in (("--metrics-bind-address", with_metrics),
                                                 ("--health-probe-bind-address", with_health)) if on)
            raise _cannot_listen(flags, host, port, exc) from None

    stop = stop or asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, stop.set)
    watcher = asyncio.create_task(server.watch_certificate(context, config,
                                                          interval=args.cert_check_interval))
    try:
        await stop.wait()
    finally:
        watcher.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await watcher
        listener.close()
        for runner in reversed(runners):
            await runner.cleanup()
        log.info("webhook_stopped")
    return 0


def run(args: argparse.Namespace) -> int:
    _configure_logging(args.log_level)
    try:
        return asyncio.run(serve(args))
    except (ValueError, OSError) as exc:
        print(f"fleetsched webhook: {exc}", file=sys.stderr)
        return 2
