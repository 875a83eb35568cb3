"""The pieces both controller commands share: flags, probe/metrics endpoints, kopf JSON, GC tuning."""

from __future__ import annotations

import argparse
import gc

import pytest
from aiohttp.test_utils import TestClient, TestServer

from fleetsched.controller.runtime import command, http
from fleetsched.controller.runtime import controller as runtime


def test_duration_and_boolean_flags() -> None:
    assert command.duration("500ms") == pytest.approx(0.5)
    assert command.duration("1m") == 60.0
    assert command.duration("2") == 2.0
    with pytest.raises(argparse.ArgumentTypeError, match="invalid duration 'soon'"):
        command.duration("soon")
    assert command.boolean("True") is True
    assert command.boolean("0") is False
    with pytest.raises(argparse.ArgumentTypeError, match="invalid boolean 'maybe'"):
        command.boolean("maybe")


def _parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    command.add_kube_api_arguments(parser, qps=40.0, burst=60)
    command.add_leader_election_arguments(parser, resource_name="lease-x")
    command.add_serving_arguments(parser, metrics=":1", health=":2")
    return parser.parse_args(list(argv))


def test_leader_election_from_flags() -> None:
    config = command.leader_election(_parse("--leader-elect-lease-duration=20s"))
    assert config is not None
    assert (config.name, config.namespace) == ("lease-x", "karmada-system")
    assert (config.lease_duration, config.renew_deadline, config.retry_period) == (20.0, 10.0, 2.0)
    assert command.leader_election(_parse("--leader-elect=false")) is None
    args = _parse()
    assert (args.kube_api_qps, args.kube_api_burst, args.metrics_bind_address) == (40.0, 60, ":1")


def test_split_address_and_listener_groups() -> None:
    assert http.split_address("0") is None
    assert http.split_address(":8080") == ("0.0.0.0", 8080)
    assert http.split_address("127.0.0.1:9") == ("127.0.0.1", 9)
    same = ("127.0.0.1", 9)
    assert http.listener_groups(same, same) == [(same, True, True)]
    other = ("127.0.0.1", 10)
    assert http.listener_groups(same, other) == [(same, True, False), (other, False, True)]
    assert http.listener_groups(None, other) == [(other, False, True)]


async def test_probe_and_metrics_endpoints() -> None:
    state = {"ready": (False, "caches not synced")}
    app = http.http_app(lambda: state["ready"], health=True, metrics_enabled=True)
    async with TestClient(TestServer(app)) as client:
        assert (await client.get("/healthz")).status == 200
        response = await client.get("/readyz")
        assert (response.status, await response.text()) == (503, "caches not synced")
        state["ready"] = (True, "ok")
        assert (await client.get("/readyz")).status == 200
        assert "karmada_scheduler_schedule_attempts_total" in await (await client.get("/metrics")).text()
    probes_only = http.http_app(lambda: (True, "ok"), health=True, metrics_enabled=False)
    async with TestClient(TestServer(probes_only)) as client:
        assert (await client.get("/metrics")).status == 404


def test_gc_is_tuned_only_when_a_command_enables_it() -> None:
    before = gc.get_threshold()
    try:
        runtime._gc_tuning["enabled"] = False
        runtime.settle_gc()
        assert gc.get_threshold() == before
        assert runtime._time_gc in gc.callbacks  # collection time is measured either way
        runtime.enable_gc_tuning()
        runtime.settle_gc()
        assert gc.get_threshold() == runtime.GC_THRESHOLDS
        assert gc.get_freeze_count() > 0
    finally:
        runtime._gc_tuning["enabled"] = False
        gc.unfreeze()
        gc.set_threshold(*before)
