"""Framing and stream validation on the pool's side, without processes: every byte is untrusted."""

from __future__ import annotations

import asyncio

import pytest

from engine.events import ErrorRaised, Limits, OutputWritten, RunFinished, RunStarted
from runner.framing import FrameDecoder, FrameError, encode_frame
from runner.handle import RunHandle, StreamError


def _frame(event: object) -> bytes:
    return event.model_dump_json().encode()  # type: ignore[attr-defined]


def _drain(handle: RunHandle) -> list:
    async def go() -> list:
        return [e async for e in handle.events()]

    return asyncio.run(go())


def test_decoder_reassembles_frames_split_anywhere() -> None:
    payloads = [b"{}", b"[1, 2, 3]", b"x" * 1000]
    data = b"".join(encode_frame(p) for p in payloads)
    for cut in range(1, 12):
        d = FrameDecoder(max_frame=4096, max_total=1 << 20)
        got = [f for i in range(0, len(data), cut) for f in d.feed(data[i : i + cut])]
        assert got == payloads and d.pending == 0


def test_decoder_refuses_a_huge_frame_before_buffering_it() -> None:
    d = FrameDecoder(max_frame=1024, max_total=1 << 20)
    with pytest.raises(FrameError, match="2147483648 bytes") as err:
        d.feed(b"\x80\x00\x00\x00")
    assert err.value.what == "frame"


def test_decoder_caps_the_whole_stream() -> None:
    d = FrameDecoder(max_frame=1024, max_total=2000)
    d.feed(encode_frame(b"x" * 1000))
    with pytest.raises(FrameError) as err:
        d.feed(encode_frame(b"x" * 1000))
    assert err.value.what == "total"


def test_handle_accepts_a_well_formed_stream() -> None:
    h = RunHandle("x = 1\n", "cpu", Limits())
    assert not h.accept(_frame(RunStarted(seq=0, source="x = 1\n")))
    assert not h.accept(_frame(OutputWritten(seq=1, stream="stdout", text="hi\n")))
    assert h.accept(_frame(RunFinished(seq=2, status="ok")))
    assert h.status == "ok"
    assert [e.type for e in _drain(h)] == ["run_started", "output", "run_finished"]


@pytest.mark.parametrize(
    ("frames", "match"),
    [
        ([b"not json"], "did not match the schema"),
        ([b'{"type": "op", "seq": 0}'], "did not match the schema"),
        ([b'{"type": "rm -rf", "seq": 0}'], "did not match the schema"),
        ([_frame(OutputWritten(seq=0, stream="stdout", text="x"))], "open with exactly one run_started"),
        (
            [_frame(RunStarted(seq=0, source="")), _frame(RunStarted(seq=1, source=""))],
            "exactly one run_started",
        ),
        (
            [_frame(RunStarted(seq=0, source="")), _frame(OutputWritten(seq=5, stream="stdout", text="x"))],
            "number 5 arrived where 1 was due",
        ),
        ([_frame(RunStarted(seq=0, source="")), _frame(RunStarted(seq=0, source=""))], "number 0 arrived"),
    ],
)
def test_handle_refuses_a_broken_stream(frames: list[bytes], match: str) -> None:
    h = RunHandle("", "cpu", Limits())
    with pytest.raises(StreamError, match=match):
        for frame in frames:
            h.accept(frame)
    h.finish("error", "stopped")
    events = _drain(h)
    assert [e.seq for e in events] == list(range(len(events)))
    assert events[0].type == "run_started" and events[-1].type == "run_finished"


def test_handle_caps_the_event_count() -> None:
    h = RunHandle("", "cpu", Limits(max_events=100))
    h.accept(_frame(RunStarted(seq=0, source="")))
    with pytest.raises(StreamError) as err:
        for i in range(1, 200):
            h.accept(_frame(OutputWritten(seq=i, stream="stdout", text="x")))
    assert err.value.status == "limit"


def test_finish_makes_up_a_complete_stream_once() -> None:
    h = RunHandle("print(1)\n", "cpu", Limits())
    h.finish("cancelled", "The run was cancelled.")
    h.finish("timeout", "ignored")
    h.cancel()
    events = _drain(h)
    assert [(e.type, e.seq) for e in events] == [("run_started", 0), ("run_finished", 1)]
    assert events[0].source == "print(1)\n" and h.status == "cancelled"


def test_out_of_memory_errors_become_a_limit_with_a_clear_message() -> None:
    h = RunHandle("", "cpu", Limits(memory_mb=512))
    h.accept(_frame(RunStarted(seq=0, source="")))
    h.accept(_frame(ErrorRaised(seq=1, exc_type="MemoryError", message="")))
    h.accept(_frame(RunFinished(seq=2, status="error", message="MemoryError")))
    assert h.status == "limit"
    assert "ran out of memory" in h.message and "512 MiB" in h.message
