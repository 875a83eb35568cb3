"""The accurate estimator's certificate files (``--scheduler-estimator-*-file``, the configuration's
``estimator.caFile``...) are read as the extender's are: regular files of bounded size (issue 23)."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from fleetsched.controller.scheduler.estimation import MAX_PEM_BYTES, accurate_estimator


def args(**files: str) -> argparse.Namespace:
    return argparse.Namespace(
        scheduler_estimator_ca_file=files.get("ca", ""),
        scheduler_estimator_cert_file=files.get("cert", ""),
        scheduler_estimator_key_file=files.get("key", ""),
        insecure_skip_estimator_verify=False,
    )


async def test_a_device_is_refused_not_read() -> None:
    with pytest.raises(ValueError) as caught:
        await accurate_estimator(None, args(ca="/dev/zero"))  # type: ignore[arg-type]
    assert (
        str(caught.value)
        == "--scheduler-estimator-ca-file: cannot read /dev/zero: not a regular file"
    )


async def test_an_oversized_key_is_refused(tmp_path: Path) -> None:
    key = tmp_path / "tls.key"
    key.write_bytes(b"k" * (MAX_PEM_BYTES + 1))
    with pytest.raises(ValueError, match=r"^--scheduler-estimator-key-file: cannot read .*tls\.key: the"):
        await accurate_estimator(None, args(key=str(key)))  # type: ignore[arg-type]
