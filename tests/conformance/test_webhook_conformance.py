"""The shared webhook conformance checker against a real ``fleetsched webhook`` over HTTPS.

Runs ``../shared/webhook-conformance/check.py --base-url https://127.0.0.1:PORT --insecure
../shared/webhook-conformance/cases`` exactly as acceptance does, plus once with the CA and
``--strict-code`` so the certificate and the denial codes are checked too.
"""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from fleetsched.webhook.testing import WebhookProcess, make_certificates
from tests.support import recorded

ROOT = Path(__file__).resolve().parents[2]
CONFORMANCE = recorded.suite("webhook-conformance")
pytestmark = pytest.mark.recorded("webhook-conformance")


@pytest.fixture(scope="module")
def webhook(tmp_path_factory: pytest.TempPathFactory) -> Iterator[WebhookProcess]:
    cert_dir = tmp_path_factory.mktemp("webhook-conformance-certs")
    make_certificates(cert_dir)
    with WebhookProcess(cert_dir) as process:
        yield process


def run_checker(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(CONFORMANCE / "check.py"), *args, str(CONFORMANCE / "cases")],
                          capture_output=True, text=True, timeout=300, cwd=ROOT)


def test_webhook_conformance_cases_pass(webhook: WebhookProcess) -> None:
    result = run_checker("--base-url", webhook.base_url, "--insecure")
    summary = result.stdout.strip().splitlines()[-1] if result.stdout.strip() else ""
    assert result.returncode == 0, result.stdout + result.stderr
    match = re.fullmatch(r"(\d+) passed, 0 failed", summary)
    assert match and int(match.group(1)) >= 40, summary


def test_webhook_conformance_with_ca_and_strict_codes(webhook: WebhookProcess) -> None:
    result = run_checker("--base-url", webhook.base_url, "--cacert", str(webhook.cert_dir / "ca.crt"),
                         "--strict-code")
    assert result.returncode == 0, result.stdout + result.stderr
