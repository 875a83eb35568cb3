"""structlog JSON logs for the operator, with kopf's, aiohttp's and grpc's stdlib loggers routed in.

One line of JSON per event on stderr: ``{"event": "binding_scheduled", "binding": "ns/name",
"level": "info", "logger": "...", "timestamp": "..."}``. Third-party libraries log through the
standard ``logging`` module; a ``ProcessorFormatter`` renders their records the same way.
"""

from __future__ import annotations

import logging
import sys

import structlog

_SHARED = [
    structlog.contextvars.merge_contextvars,
    structlog.stdlib.add_log_level,
    structlog.stdlib.add_logger_name,
    structlog.processors.TimeStamper(fmt="iso", utc=True),
]


def configure(level: str = "info") -> None:
    numeric = logging.getLevelNamesMapping().get(level.upper(), logging.INFO)
    structlog.configure(
        processors=[
            *_SHARED,
            structlog.processors.StackInfoRenderer(),
            structlog.processors.format_exc_info,
            structlog.stdlib.ProcessorFormatter.wrap_for_formatter,
        ],
        logger_factory=structlog.stdlib.LoggerFactory(),
        wrapper_class=structlog.make_filtering_bound_logger(numeric),
        cache_logger_on_first_use=True,
    )
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(
        structlog.stdlib.ProcessorFormatter(
            foreign_pre_chain=[*_SHARED, structlog.stdlib.ExtraAdder()],
            processors=[
                structlog.stdlib.ProcessorFormatter.remove_processors_meta,
                structlog.processors.format_exc_info,
                structlog.processors.JSONRenderer(),
            ],
        )
    )
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(numeric)
    # kopf is chatty at INFO about every object; keep its warnings and errors.
    for name, floor in (("kopf", logging.WARNING), ("aiohttp.access", logging.WARNING), ("grpc", numeric)):
        lib = logging.getLogger(name)
        lib.handlers[:] = []
        lib.propagate = True
        lib.setLevel(max(numeric, floor))
