"""One real ``fleetsched webhook`` process per module, on loopback with a throwaway CA."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from fleetsched.webhook.testing import WebhookProcess, free_port, make_certificates


@pytest.fixture(scope="module")
def webhook(tmp_path_factory: pytest.TempPathFactory) -> Iterator[WebhookProcess]:
    cert_dir: Path = tmp_path_factory.mktemp("webhook-certs")
    make_certificates(cert_dir)
    process = WebhookProcess(cert_dir, metrics_port=free_port(), probe_port=free_port(),
                             extra_args=("--cert-check-interval", "0.2"))
    with process:
        yield process
