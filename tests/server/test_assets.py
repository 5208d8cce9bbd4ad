"""The bundle as a class fetches it from the real server: versioned URLs cached for good,
everything else revalidated, and gzip for what GET answers (``server/assets.py``)."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import anyio
import httpx
from starlette.applications import Starlette
from starlette.routing import Mount

from server.assets import IMMUTABLE, REVALIDATE, VersionedStatic, asset_version
from server.settings import Settings
from tests.conftest import need
from tests.server.test_api import QUICK, wait_finished

DIST = Settings().static_dir / "dist"


def test_the_version_is_new_after_every_rebuild(tmp_path: Path) -> None:
    assert asset_version(tmp_path) == "unbuilt"
    dist = tmp_path / "dist"
    dist.mkdir()
    (dist / "app.js").write_text("one")
    (dist / "app.css").write_text("css")
    first = asset_version(tmp_path)
    assert re.fullmatch(r"[0-9a-f]{12}", first) and asset_version(tmp_path) == first
    (dist / "app.js").write_text("two")  # same size: the modification time tells them apart
    os.utime(dist / "app.js", ns=(1, 1))
    assert asset_version(tmp_path) != first
    (dist / "other.txt").write_text("not part of the bundle")
    second = asset_version(tmp_path)
    (dist / "other.txt").write_text("changed")
    assert asset_version(tmp_path) == second


def test_a_file_is_gzipped_once_per_build_and_again_after_a_rebuild(tmp_path: Path) -> None:
    (tmp_path / "dist").mkdir()
    script = tmp_path / "dist" / "app.js"
    script.write_text("console.log('one');\n" * 500)
    static = VersionedStatic(directory=tmp_path)
    app = Starlette(routes=[Mount("/static", static)])

    async def check() -> None:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://gradwalk.test") as client:
            first = await client.get("/static/dist/app.js")
            assert first.headers["content-encoding"] == "gzip" and first.text == script.read_text()
            assert "accept-ranges" not in first.headers and first.headers["vary"] == "Accept-Encoding"
            kept = static._gzipped[str(script)]
            assert (await client.get("/static/dist/app.js")).content == first.content
            assert static._gzipped[str(script)] is kept  # not compressed again
            script.write_text("console.log('two');\n" * 500)  # a rebuild
            assert (await client.get("/static/dist/app.js")).text == script.read_text()
            # what is not worth it goes as it is: a tiny file, a client without gzip, a range
            (tmp_path / "dist" / "small.css").write_text("a{}")
            assert "content-encoding" not in (await client.get("/static/dist/small.css")).headers
            plain = await client.get("/static/dist/app.js", headers={"accept-encoding": "identity"})
            assert "content-encoding" not in plain.headers and plain.text == script.read_text()
            part = await client.get("/static/dist/app.js", headers={"range": "bytes=0-9"})
            assert part.status_code == 206 and part.content == b"console.lo"

    anyio.run(check)


def _bundle_url(page: str, name: str) -> str:
    found = re.search(rf'"(/static/dist/{re.escape(name)}\?v=[0-9a-f]{{12}})"', page)
    assert found, f"{name} is not named with a version in the page"
    return found.group(1)


def test_the_pages_name_the_bundle_by_version_and_it_is_cached_for_good(api: httpx.Client) -> None:
    need((DIST / "app.js").is_file(), "the web bundle is not built: make web")
    page = api.get("/").text
    script, style = _bundle_url(page, "app.js"), _bundle_url(page, "app.css")
    assert script.split("?")[1] == style.split("?")[1]  # one version for the whole build

    raw = (DIST / "app.js").read_bytes()
    cached = api.get(script)
    assert cached.headers["cache-control"] == IMMUTABLE
    assert cached.headers["content-encoding"] == "gzip" and cached.content == raw
    assert cached.num_bytes_downloaded < len(raw) / 2  # 1 MB of JavaScript: about a third
    again = api.get(script, headers={"if-none-match": cached.headers["etag"]})
    assert again.status_code == 304

    # no version, or another build's: the browser must ask again before using it
    for url in ("/static/dist/app.js", "/static/dist/app.js?v=0123456789ab"):
        assert api.get(url).headers["cache-control"] == REVALIDATE
    # a client that does not take gzip gets the file as it is
    plain = api.get(script, headers={"accept-encoding": "identity"})
    assert "content-encoding" not in plain.headers and plain.content == raw


def test_a_trace_and_an_export_are_sent_compressed(api: httpx.Client) -> None:
    run_id = api.post("/api/runs", json={"source": QUICK}).raise_for_status().json()["id"]
    assert wait_finished(api, run_id)["status"] == "ok"
    trace = api.get(f"/api/runs/{run_id}/trace")
    assert trace.headers["content-encoding"] == "gzip"
    assert trace.num_bytes_downloaded < len(trace.content) / 2
    assert json.loads(trace.content)["events"][0]["type"] == "run_started"
    need((DIST / "viewer.js").is_file(), "the web bundle is not built: make web")
    export = api.get(f"/api/runs/{run_id}/export")
    assert export.status_code == 200 and export.headers["content-encoding"] == "gzip"
    assert export.num_bytes_downloaded < len(export.content) / 2
