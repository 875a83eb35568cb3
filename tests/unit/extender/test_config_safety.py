"""What an extender's configuration may make the scheduler read or show (issue 23): certificate files
are regular files of bounded size, and a URL's user info is refused, and never shown."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from fleetsched.extender import ExtenderConfigError, HTTPExtender
from fleetsched.extender.client import MAX_PEM_BYTES
from fleetsched.scheduler.framework.profile import ExtenderConfig, ExtenderTLS, redact_url


def build(tls: ExtenderTLS, url: str = "https://extender.example:8443/x") -> HTTPExtender:
    return HTTPExtender(ExtenderConfig(url_prefix=url, filter_verb="filter", tls=tls))


def test_a_ca_file_that_is_a_device_is_refused_not_read() -> None:
    with pytest.raises(ExtenderConfigError) as caught:
        build(ExtenderTLS(ca_file="/dev/zero"))
    assert str(caught.value) == (
        "extender https://extender.example:8443/x: tls.caFile: cannot read /dev/zero: not a regular file"
    )


def test_a_fifo_or_directory_is_refused(tmp_path: Path) -> None:
    fifo = tmp_path / "ca.pem"
    os.mkfifo(fifo)
    with pytest.raises(ExtenderConfigError, match=r"tls\.caFile: cannot read .*ca\.pem: not a regular file"):
        build(ExtenderTLS(ca_file=str(fifo)))
    with pytest.raises(ExtenderConfigError, match=r"tls\.certFile: .*: not a regular file"):
        build(ExtenderTLS(cert_file=str(tmp_path), key_file=str(tmp_path)))


def test_an_oversized_certificate_file_is_refused(tmp_path: Path) -> None:
    big = tmp_path / "bundle.pem"
    big.write_bytes(b"#" * (MAX_PEM_BYTES + 1))
    with pytest.raises(ExtenderConfigError) as caught:
        build(ExtenderTLS(ca_file=str(big)))
    assert str(caught.value).endswith(
        f"tls.caFile: cannot read {big}: the file holds {MAX_PEM_BYTES + 1} bytes, "
        f"more than the {MAX_PEM_BYTES} allowed"
    )


def test_a_url_with_user_info_is_refused_without_the_password() -> None:
    with pytest.raises(ExtenderConfigError) as caught:
        HTTPExtender(ExtenderConfig(url_prefix="http://admin:s3cr3t@extender.example/x", filter_verb="f"))
    message = str(caught.value)
    assert (
        message
        == "extender http://***@extender.example/x: urlPrefix: must not carry user info (user:password@)"
    )


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        pytest.param("http://admin:s3cr3t@h:8080/x", "http://***@h:8080/x", id="user and password"),
        pytest.param("https://token@h/x", "https://***@h/x", id="user only"),
        pytest.param("http://a:b@c@h/x", "http://***@h/x", id="@ in the password"),
        pytest.param("http://u:p@[::1]:9/x", "http://***@[::1]:9/x", id="IPv6"),
        pytest.param("http://h/x@y", "http://h/x@y", id="@ in the path only"),
        pytest.param("https://h:8443/x", "https://h:8443/x", id="no user info"),
    ],
)
def test_an_extender_is_named_without_its_user_info(url: str, shown: str) -> None:
    assert redact_url(url) == shown
    assert ExtenderConfig(url_prefix=url).name == shown
