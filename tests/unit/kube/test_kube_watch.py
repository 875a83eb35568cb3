"""fleetsched.kube.watch without a server: lines become events, bookmarks and skipped versions only
move the resourceVersion, 410 means relist, and a relist hands over what vanished as DELETED."""

from __future__ import annotations

import itertools
from typing import Any

import orjson
import pytest

from fleetsched.kube import watch


def a_watch(received: list[tuple[str | None, dict[str, Any]]], **kwargs: Any) -> watch.Watch:
    return watch.Watch(
        None,  # type: ignore[arg-type]  # no request is made here
        "/apis/example.io/v1/widgets",
        lambda kind, obj: received.append((kind, obj)),
        api_version="example.io/v1",
        kind="Widget",
        **kwargs,
    )


def test_the_version_probe_reads_metadata_s_version_and_nothing_else() -> None:
    raw = b'{"type":"MODIFIED","object":' + orjson.dumps(
        {"apiVersion": "v", "kind": "K", "metadata": {"annotations": {"a": '{"resourceVersion":"1"}'},
                                                      "name": "w", "resourceVersion": "42"},
         "spec": {"resource": {"resourceVersion": "7"}}}, option=orjson.OPT_SORT_KEYS) + b"}"
    assert watch._probe_version(raw) == "42"
    assert watch._probe_version(raw.replace(b"MODIFIED", b"ADDED", 1)) is None  # only echoes are skipped
    assert watch._probe_version(b'{"type":"MODIFIED","object":{"metadata":{"resourceVersion":"x1"}}}') is None


def test_events_bookmarks_skips_and_gone() -> None:
    received: list[tuple[str | None, dict[str, Any]]] = []
    skipped: list[str] = []
    w = a_watch(received, transform=watch.strip_managed_fields,
                skip_version=lambda v: skipped.append(v) or v == "12")  # type: ignore[func-returns-value]

    def event(kind: str, name: str, version: str) -> bytes:
        obj = {"apiVersion": "example.io/v1", "kind": "Widget", "spec": {},
               "metadata": {"managedFields": [{"manager": "m"}], "name": name, "resourceVersion": version}}
        body = orjson.dumps(obj, option=orjson.OPT_SORT_KEYS)
        return b'{"type":"' + kind.encode() + b'","object":' + body + b"}"

    w._on_line(event("ADDED", "a", "11"))
    w._on_line(event("MODIFIED", "a", "12"))  # the echo of an own write: not parsed, not handed over
    w._on_line(b'{"type":"BOOKMARK","object":{"kind":"Widget","metadata":{"resourceVersion":"15"}}}')
    assert w.resource_version == "15"
    w._on_line(event("MODIFIED", "a", "16"))
    w._on_line(event("DELETED", "a", "17"))
    assert [(k, o["metadata"]["resourceVersion"]) for k, o in received] == [
        ("ADDED", "11"), ("MODIFIED", "16"), ("DELETED", "17")
    ]
    assert all("managedFields" not in o["metadata"] for _, o in received)
    assert skipped == ["12", "16"]
    with pytest.raises(watch.Gone):
        w._on_line(b'{"type":"ERROR","object":{"kind":"Status","code":410,"reason":"Expired"}}')


async def test_a_relist_hands_over_what_vanished_as_deleted() -> None:
    received: list[tuple[str | None, dict[str, Any]]] = []
    w = a_watch(received)
    pages = [[{"metadata": {"name": "a", "namespace": "ns"}}, {"metadata": {"name": "b", "namespace": "ns"}}],
             [{"metadata": {"name": "b", "namespace": "ns"}}]]

    class Lister:
        async def list_all(self, path: str, *, page_size: int) -> tuple[list[dict[str, Any]], str]:
            return pages.pop(0), "100"

    w.client = Lister()  # type: ignore[assignment]
    await w._list()
    await w._list()
    assert [(k, o["metadata"]["name"], o["kind"]) for k, o in received] == [
        (None, "a", "Widget"), (None, "b", "Widget"), (None, "b", "Widget"), ("DELETED", "a", "Widget")
    ]
    assert w.resource_version == "100"


async def test_a_watch_given_the_caller_s_list_starts_from_it_and_a_relist_still_says_what_vanished() -> None:
    received: list[tuple[str | None, dict[str, Any]]] = []
    synced = [{"metadata": {"name": "a", "namespace": "ns"}}, {"metadata": {"name": "b", "namespace": "ns"}}]
    w = a_watch(received, listed=("90", synced))
    assert w.resource_version == "90" and w.listed.is_set()  # run() watches from 90: no LIST first
    assert received == []  # the caller handled those objects itself

    class Lister:
        async def list_all(self, path: str, *, page_size: int) -> tuple[list[dict[str, Any]], str]:
            return [{"metadata": {"name": "b", "namespace": "ns"}}], "100"

    w.client = Lister()  # type: ignore[assignment]
    await w._list()  # after a 410
    assert [(k, o["metadata"]["name"]) for k, o in received] == [(None, "b"), ("DELETED", "a")]


async def chunks_of(*pieces: bytes) -> Any:
    for piece in pieces:
        yield piece


async def test_lines_are_read_however_the_stream_is_cut_and_an_endless_line_is_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    received: list[tuple[str | None, dict[str, Any]]] = []
    w = a_watch(received)
    lines = [b'{"type":"ADDED","object":{"metadata":{"name":"%d","resourceVersion":"%d"}}}' % (i, i)
             for i in range(4)]
    stream = b"\n".join(lines) + b"\n\n"
    cuts = [0, 3, 40, 41, 90, 200, 201, len(stream) - 1, len(stream)]
    await w._read_lines(chunks_of(*(stream[a:b] for a, b in itertools.pairwise(cuts))))
    assert [o["metadata"]["name"] for _, o in received] == ["0", "1", "2", "3"]

    monkeypatch.setattr(watch, "MAX_EVENT_LINE", 1000)
    with pytest.raises(watch.ProtocolError, match="watch event line over"):  # one long piece
        await w._read_lines(chunks_of(lines[0] + b"\n" + b"x" * 1001))
    with pytest.raises(watch.ProtocolError, match="watch event line over"):  # many short ones
        await w._read_lines(chunks_of(*[b"y" * 100] * 11))
    assert isinstance(watch.ProtocolError("x"), OSError)  # Watch.run retries it with backoff
