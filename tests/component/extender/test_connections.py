"""Connection handling: keep-alive reuse, TLS verification, mutual TLS, start-up errors."""

from __future__ import annotations

import threading

import pytest

from fleetsched.extender.client import ExtenderConfigError, HTTPExtender, build_extenders
from fleetsched.extender.errors import ExtenderError, FaultKind
from fleetsched.scheduler.framework.profile import ExtenderConfig, ExtenderTLS
from fleetsched.testing.extender import Behaviour, ExtenderServer

from .conftest import BINDING, CLUSTERS, Extenders, Pki, config, extender_scores, schedule

pytestmark = pytest.mark.component


def test_one_keep_alive_connection_serves_many_bindings(pki: Pki, make: Extenders) -> None:
    with ExtenderServer(cert_file=pki.server_cert, key_file=pki.server_key) as server:
        ext = make(config(server.url(Behaviour.OK), pki))
        for _ in range(25):
            assert extender_scores(schedule([ext])) == {"m1": 70, "m4": 20}
        assert server.stats.total_requests == 50
        assert server.stats.connections == 1


def test_workers_in_parallel_share_a_bounded_pool(pki: Pki, make: Extenders) -> None:
    with ExtenderServer(cert_file=pki.server_cert, key_file=pki.server_key) as server:
        ext = make(config(server.url(Behaviour.OK), pki, timeout=5), pool_size=2)
        results: list[tuple[str, ...]] = []

        def worker() -> None:
            for _ in range(10):
                results.append(ext.filter(BINDING, CLUSTERS).kept)

        threads = [threading.Thread(target=worker) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
        assert results == [("m1", "m4")] * 40
        assert 1 <= server.stats.connections <= 2
        ext.close()


def test_a_server_certificate_from_another_ca_is_refused(server: ExtenderServer, pki: Pki,
                                                         make: Extenders) -> None:
    ext = make(ExtenderConfig(url_prefix=server.url(Behaviour.OK), filter_verb="filter",
                              tls=ExtenderTLS(ca_file=str(pki.other_ca_file))))
    with pytest.raises(ExtenderError) as caught:
        ext.filter(BINDING, CLUSTERS)
    assert caught.value.kind is FaultKind.UNREACHABLE
    assert "certificate" in caught.value.detail
    insecure = make(ExtenderConfig(url_prefix=server.url(Behaviour.OK), filter_verb="filter",
                                   tls=ExtenderTLS(insecure=True)))
    assert insecure.filter(BINDING, CLUSTERS).kept == ("m1", "m4")


def test_server_name_is_what_the_certificate_is_checked_against(server: ExtenderServer, pki: Pki,
                                                                make: Extenders) -> None:
    named = make(config(server.url(Behaviour.OK), pki, server_name="extender.test"))
    assert named.filter(BINDING, CLUSTERS).kept == ("m1", "m4")
    wrong = make(config(server.url(Behaviour.OK), pki, server_name="elsewhere.test"))
    with pytest.raises(ExtenderError) as caught:
        wrong.filter(BINDING, CLUSTERS)
    assert caught.value.kind is FaultKind.UNREACHABLE and "elsewhere.test" in caught.value.detail


def test_mutual_tls_needs_the_client_certificate(pki: Pki, make: Extenders) -> None:
    with ExtenderServer(cert_file=pki.server_cert, key_file=pki.server_key,
                        client_ca_file=pki.ca_file) as server:
        with_cert = make(config(server.url(Behaviour.OK), pki, client_cert=True))
        assert with_cert.filter(BINDING, CLUSTERS).kept == ("m1", "m4")
        # The refusal is immediate; a loaded machine must not turn it into "slow".
        without = make(config(server.url(Behaviour.OK), pki, timeout=10))
        with pytest.raises(ExtenderError) as caught:
            without.filter(BINDING, CLUSTERS)
        assert caught.value.kind is FaultKind.UNREACHABLE
        assert caught.value.extender == without.name
        # TLS 1.3 completes the handshake before the server refuses, so the client only sees a close
        assert "client certificate" in caught.value.detail


def test_extenders_are_built_in_configuration_order_and_a_bad_one_is_refused() -> None:
    good = ExtenderConfig(url_prefix="https://a:1/x", filter_verb="filter")
    built = build_extenders([good, ExtenderConfig(url_prefix="https://b:1/x", prioritize_verb="p", weight=4)])
    assert [(e.name, e.supports_filter, e.supports_prioritize, e.weight) for e in built] == [
        ("https://a:1/x", True, False, 1), ("https://b:1/x", False, True, 4)]
    with pytest.raises(ExtenderConfigError, match=r"^extender https://c:1/x: tls\.certFile: cannot read"):
        build_extenders([good, ExtenderConfig(url_prefix="https://c:1/x",
                                              tls=ExtenderTLS(cert_file="/nonexistent/tls.crt"))])


@pytest.mark.parametrize(("tls", "url", "message"), [
    pytest.param(ExtenderTLS(ca_file="/nonexistent/ca.crt"), "https://e:1/x",
                 "extender https://e:1/x: tls.caFile: cannot read /nonexistent/ca.crt: "
                 "No such file or directory",
                 id="missing CA file"),
    pytest.param(ExtenderTLS(ca_data=b"not a pem"), "https://e:1/x",
                 "extender https://e:1/x: tls.caData: not a PEM CA bundle", id="garbage CA data"),
    pytest.param(ExtenderTLS(key_file="/k"), "https://e:1/x",
                 "extender https://e:1/x: tls.keyFile: set without tls.certFile", id="key without cert"),
    pytest.param(ExtenderTLS(), "http://e:1/x", "extender http://e:1/x: tls: set, but urlPrefix is http://",
                 id="tls on http"),
    pytest.param(None, "ftp://e/x", "extender ftp://e/x: urlPrefix: must be an http:// or https:// URL",
                 id="not http"),
])
def test_configuration_errors_name_the_extender_and_field(tls: ExtenderTLS | None, url: str,
                                                          message: str) -> None:
    with pytest.raises(ExtenderConfigError) as caught:
        HTTPExtender(ExtenderConfig(url_prefix=url, filter_verb="filter", tls=tls))
    assert str(caught.value).startswith(message)
    assert "\n" not in str(caught.value)


def test_a_cluster_cache_capable_extender_gets_names_only(server: ExtenderServer, pki: Pki,
                                                          make: Extenders) -> None:
    ext = make(config(server.url(Behaviour.OK), pki), cluster_cache_capable=True)
    # the test extender knows no labels without the objects, so it keeps everything
    assert ext.filter(BINDING, CLUSTERS).kept == ("m1", "m2", "m3", "m4")
    args = server.stats.last_args
    assert args is not None and args.clusters is None and args.cluster_names == ["m1", "m2", "m3", "m4"]
