"""The server's parts on their own: models, rate limiter, CSP, viewer lag, pool start-up."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from engine.events import Limits
from server import workers
from server.live import LiveRun
from server.models import LimitsPatch, RunCreate
from server.routes.events import _past_the_end, _Progress, _send
from server.security import RateLimiter, page_csp
from server.settings import Settings, is_loopback
from server.ws_close import close_reason


def test_limits_patch_mirrors_limits() -> None:
    want = Limits.model_json_schema()["properties"]
    got = LimitsPatch.model_json_schema()["properties"]
    assert got.keys() == want.keys()
    for name, prop in got.items():
        inner = next(p for p in prop["anyOf"] if p.get("type") != "null")
        expected = {k: v for k, v in want[name].items() if k not in ("default", "title")}
        assert {**inner, "description": prop.get("description")} == expected, name


def test_run_create_refuses_nul_and_surrogates() -> None:
    with pytest.raises(ValueError, match="NUL"):
        RunCreate(source="a\x00b")
    with pytest.raises(ValueError, match=r"(?i)unicode"):
        RunCreate(source="\ud800")


def test_rate_limiter_is_a_token_bucket_per_client() -> None:
    limiter = RateLimiter(burst=2, per_s=1.0)
    assert limiter.take("a", now=0.0) == 0.0
    assert limiter.take("a", now=0.0) == 0.0
    assert limiter.take("a", now=0.0) == pytest.approx(1.0)
    assert limiter.take("b", now=0.0) == 0.0  # another client has its own bucket
    assert limiter.take("a", now=1.5) == 0.0  # refilled
    small = RateLimiter(burst=1, per_s=1.0, max_clients=2)
    for client in "xyz":
        small.take(client, now=0.0)
    assert len(small._buckets) == 2


def test_page_csp_is_strict_and_only_embeds_may_be_framed() -> None:
    csp = page_csp("127.0.0.1:8000")
    assert "default-src 'self'" in csp and "script-src 'self';" in csp and "frame-ancestors 'none'" in csp
    assert "connect-src 'self' ws://127.0.0.1:8000 wss://127.0.0.1:8000" in csp
    assert "unsafe" not in csp and "https:" not in csp
    # any page may frame an embed, one opened from disk (file:) too, which '*' does not cover
    assert "frame-ancestors" not in page_csp("h", embed=True)
    assert "evil" not in page_csp("evil.example; script-src *")  # a hostile Host header is not echoed


def test_settings_pick_isolation_and_hosts_by_binding() -> None:
    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost")
    assert not is_loopback("0.0.0.0") and not is_loopback("example.org")
    local = Settings()
    assert local.effective_isolation == "local" and "localhost" in local.effective_allowed_hosts
    public = Settings(host="0.0.0.0")
    assert public.effective_isolation == "strict" and public.effective_allowed_hosts == ["*"]


class _SlowSocket:
    def __init__(self, delay: float) -> None:
        self.delay = delay
        self.sent: list[str] = []

    async def send_text(self, text: str) -> None:
        await asyncio.sleep(self.delay)
        self.sent.append(text)

    def events(self, batch: bool) -> list[int]:
        """The seqs sent, frame by frame or batch by batch."""
        frames = [json.loads(f) for f in self.sent]
        return [e["seq"] for f in frames for e in (f if batch else [f])]


@pytest.mark.parametrize("batch", [False, True])
def test_a_viewer_too_far_behind_a_live_run_is_closed(batch: bool) -> None:
    async def scenario() -> tuple[int, str, list[int]]:
        run = LiveRun(id="r", source="", device="cpu", title=None)
        ws = _SlowSocket(0.01)
        sender = asyncio.create_task(_send(ws, run, 0, 5, _Progress(), batch))  # type: ignore[arg-type]
        for i in range(50):
            run.append(f'{{"seq":{i}}}')
            await asyncio.sleep(0)
        code, reason = await asyncio.wait_for(sender, 5)
        return code, reason, ws.events(batch)

    code, reason, sent = asyncio.run(scenario())
    assert code == 1013 and "behind" in reason and f"after={sent[-1]}" in reason
    assert sent == list(range(len(sent)))


@pytest.mark.parametrize("batch", [False, True])
def test_a_viewer_of_a_finished_run_is_never_too_far_behind(batch: bool) -> None:
    async def scenario() -> tuple[int, list[int], int]:
        run = LiveRun(id="r", source="", device="cpu", title=None)
        for i in range(50):
            run.append(f'{{"seq":{i}}}')
        run.finish("ok", "", None)
        ws = _SlowSocket(0)
        code, _ = await _send(ws, run, 10, 5, _Progress(), batch)  # type: ignore[arg-type]
        return code, ws.events(batch), len(ws.sent)

    code, sent, frames = asyncio.run(scenario())
    assert code == 1000 and sent == list(range(10, 50)) and frames == (1 if batch else 40)


class _Pool:
    def __init__(self, *, isolation: str, **_: Any) -> None:
        self.isolation = isolation

    async def start(self) -> None:
        if self.isolation == "strict":
            raise workers.SandboxUnavailable("no seccomp here", missing=["seccomp"])


def test_strict_isolation_falls_back_only_when_allowed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(workers, "WorkerPool", _Pool)
    with pytest.raises(workers.SandboxUnavailable):
        asyncio.run(workers.start_pool(Settings(host="0.0.0.0")))
    pool = asyncio.run(workers.start_pool(Settings(host="0.0.0.0", allow_unsandboxed=True)))
    assert pool.isolation == "local"
    assert asyncio.run(workers.start_pool(Settings())).isolation == "local"


def test_the_recent_runs_cache_is_bounded_in_count_and_size(monkeypatch: pytest.MonkeyPatch) -> None:
    from server import registry as reg
    from server.storage import RunRecord

    monkeypatch.setattr(reg, "_CACHE_CHARS", 1000)
    registry = reg.RunRegistry(store=None, pool=None)  # type: ignore[arg-type]
    for i in range(30):
        registry._remember(
            RunRecord(id=f"r{i}", created_at=0, status="ok", device="cpu", source=""), ["x" * 100]
        )
    assert list(registry._cache) == [f"r{i}" for i in range(20, 30)]  # 10 x 100 chars fit in 1000
    registry._remember(RunRecord(id="big", created_at=0, status="ok", device="cpu", source=""), ["x" * 600])
    assert "big" not in registry._cache  # over a quarter of the budget: never cached


def test_a_cut_off_runs_close_reason_keeps_the_after_and_ends_its_message_with_an_ellipsis() -> None:
    # the reason read "...(the server is shutting down; it has no event after seq 14 (asked
    # for after=": the message cut to 50 characters, then the whole to 123 bytes
    run = LiveRun(id="r", source="", device="cpu", title=None, status="cancelled", finished_at=1.0)
    run.message = "The run was cancelled (the server is shutting down); its events up to that point are kept."
    run.frames = ["{}"] * 15
    reason = close_reason(_past_the_end(run, 15) or "")
    assert len(reason.encode()) <= 123
    assert reason.startswith(
        "the run ended cancelled; no event after seq 14 (asked for after=15). The run was"
    )
    assert reason.endswith("…")
    assert close_reason("é" * 100) == "é" * 60 + "…"  # cut at a character, 123 bytes at most
    assert close_reason("short") == "short"
