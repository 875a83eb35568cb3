"""``karmada_build_info``: the build metadata gauge every Karmada component exports, under Karmada's
name and labels (``pkg/metrics/version.go``: ``NewBuildInfoCollector``), so a dashboard or an alert
that counts versions (``count by (git_version) (karmada_build_info)``) sees fleetsched's processes.

The labels are Karmada's; their values are fleetsched's: ``git_version`` is ``v`` + the package
version, the git fields and ``build_date`` come from the image's build arguments when it set them
(``FLEETSCHED_GIT_COMMIT``, ``FLEETSCHED_GIT_TREE_STATE``, ``FLEETSCHED_BUILD_DATE``; empty
otherwise, as in an unstamped Go build), ``go_version`` carries the Python version, ``compiler`` the
Python implementation and ``platform`` is ``os/arch`` in Go's words (``linux/amd64``).

No I/O and nothing else of fleetsched: every process (scheduler, policy controller, estimator,
webhook) registers it on its own registry.
"""

from __future__ import annotations

import os
import platform
import sys

from prometheus_client import CollectorRegistry, Gauge

from fleetsched import __version__

__all__ = ["NAME", "labels", "register"]

NAME = "karmada_build_info"
# Go's GOARCH for the machine names Python reports.
_ARCH = {"x86_64": "amd64", "amd64": "amd64", "aarch64": "arm64", "arm64": "arm64", "ppc64le": "ppc64le",
         "s390x": "s390x"}


def labels() -> dict[str, str]:
    """Karmada's label set, filled from this interpreter and the build's environment."""
    commit = os.environ.get("FLEETSCHED_GIT_COMMIT", "")
    machine = platform.machine().lower()
    return {
        "git_version": f"v{__version__}",
        "git_commit": commit,
        "git_short_commit": commit[:7],
        "git_tree_state": os.environ.get("FLEETSCHED_GIT_TREE_STATE", ""),
        "build_date": os.environ.get("FLEETSCHED_BUILD_DATE", ""),
        "go_version": f"python{platform.python_version()}",
        "compiler": sys.implementation.name,
        "platform": f"{sys.platform}/{_ARCH.get(machine, machine)}",
    }


def register(registry: CollectorRegistry) -> Gauge:
    """The gauge (value 1) on ``registry``."""
    values = labels()
    gauge = Gauge(NAME, "Karmada build metadata exposed as labels with a constant value of 1.",
                  list(values), registry=registry)
    gauge.labels(**values).set(1)
    return gauge
