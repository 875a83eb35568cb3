"""The webhook's slots (server._Gate): who gives way to whom, and when /readyz says saturated.

Driven on a real event loop with stand-in readers (a body that never arrives, as in
``server._read_body``: a read under ``asyncio.timeout_at`` whose timeout eviction moves to now).
"""

from __future__ import annotations

import asyncio
import contextlib

import pytest

from fleetsched.webhook import server


class _Held:
    """A body arriving from ``client`` forever; ``evicted`` once its slot was given away."""

    def __init__(self, gate: server._Gate, client: str) -> None:
        self.client = client
        self.evicted = False
        self.refused: server._Aborted | None = None
        self.task = asyncio.ensure_future(self._run(gate))

    async def _run(self, gate: server._Gate) -> None:
        try:
            with gate.reading(self.client, False) as reader:
                loop = asyncio.get_running_loop()
                try:
                    async with asyncio.timeout_at(loop.time() + 3600) as timeout:
                        reader.timeout = timeout
                        await asyncio.sleep(3600)
                except TimeoutError:
                    self.evicted = bool(reader.evicted)
        except server._Aborted as exc:
            self.refused = exc


async def _settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


def _run(body: object) -> None:
    asyncio.run(body)  # type: ignore[arg-type]


def _gate(**limits: float) -> server._Gate:
    return server._Gate(server.Limits(**limits))  # type: ignore[arg-type]


async def _cleanup(held: list[_Held]) -> None:
    for h in held:
        h.task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await asyncio.gather(*(h.task for h in held), return_exceptions=True)


def test_a_full_gate_takes_the_slot_of_the_oldest_body_of_the_busiest_client() -> None:
    async def body() -> None:
        gate = _gate(max_reading=3, evict_after=0.0)
        held = [_Held(gate, "10.0.0.9"), _Held(gate, "10.0.0.1"), _Held(gate, "10.0.0.1")]
        await _settle()
        held.append(_Held(gate, "10.0.0.2"))  # the newcomer
        await _settle()
        assert [h.evicted for h in held] == [False, True, False, False]
        assert held[3].refused is None and len(gate.readers) == 3
        assert gate.reading_by_client == {"10.0.0.9": 1, "10.0.0.1": 1, "10.0.0.2": 1}
        await _cleanup(held)
        assert not gate.readers and not gate.reading_by_client

    _run(body())


def test_past_its_share_a_client_gives_way_to_itself_not_to_others() -> None:
    async def body() -> None:
        gate = _gate(max_reading=10, max_reading_per_client=2, evict_after=0.0)
        held = [_Held(gate, "other"), _Held(gate, "busy"), _Held(gate, "busy")]
        await _settle()
        held.append(_Held(gate, "busy"))
        await _settle()
        assert [h.evicted for h in held] == [False, True, False, False]
        await _cleanup(held)

    _run(body())


def test_young_bodies_are_not_cut_the_newcomer_is_refused_and_readyz_follows() -> None:
    async def body() -> None:
        gate = _gate(max_reading=2, max_reading_per_client=1, evict_after=3600.0, saturation_window=0.0)
        held = [_Held(gate, "a"), _Held(gate, "b")]
        await _settle()
        assert gate.unready_reason() is None
        same = _Held(gate, "a")
        await _settle()
        assert same.refused is not None and same.refused.reason == "too_many_bodies_from_client"
        assert gate.unready_reason() is None, "one client over its share is that client's problem"
        third = _Held(gate, "c")
        await _settle()
        assert third.refused is not None and third.refused.code == 429
        assert "--max-requests-reading)" in str(third.refused)
        reason = gate.unready_reason()
        assert reason is not None and "--max-requests-reading" in reason
        held[0].task.cancel()  # a slot is freed
        await _settle()
        assert gate.unready_reason() is None
        await _cleanup(held)

    _run(body())


def test_past_the_processing_slots_the_refusal_carries_the_uid_of_the_body() -> None:
    async def body() -> None:
        gate = _gate(max_in_flight=1, saturation_window=0.0)
        first = bytearray(b'{"request":{"uid":"first"}}')
        with gate.reviewing(first):
            second = bytearray(b'{"request":{"uid":"x"}}')
            with pytest.raises(server._Aborted) as refused, gate.reviewing(second):
                pass
            assert gate.unready_reason() is not None
        assert refused.value.reason == "too_many_requests" and refused.value.head.startswith(b'{"request"')
        assert gate.unready_reason() is None

    _run(body())
