"""Self-contained exports: one HTML file, opened from disk with the network off, steps to the leaf."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import gradwalk_cli

from .conftest import LEAF, NEXT, ROOT, expect, open_app, run_example, settle, shot, stored_run, wait_viewer

pytestmark = pytest.mark.browser

CUBIC = ROOT / "server" / "examples" / "cubic.py"


@pytest.fixture(scope="module")
def cubic_trace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from engine.run import record

    path = tmp_path_factory.mktemp("traces") / "cubic.trace.json"
    path.write_text(record(CUBIC.read_text(), filename="cubic.py").model_dump_json())
    return path


def open_offline(page: Any, path: Path) -> list[str]:
    """Open `path` from disk with every network request refused; return the URLs requested."""
    requested: list[str] = []

    def guard(route: Any) -> None:
        requested.append(route.request.url)
        if route.request.url.startswith(("file:", "blob:", "data:")):
            route.continue_()
        else:
            route.abort()

    page.context.route("**/*", guard)
    page.goto(path.resolve().as_uri())
    wait_viewer(page)
    return requested


def test_an_exported_file_steps_to_the_leaf_offline(page: Any, cubic_trace: Path, tmp_path: Path) -> None:
    out = tmp_path / "cubic.html"
    result = gradwalk_cli("export", str(cubic_trace), "-o", str(out))
    assert result.returncode == 0, result.stderr
    assert f"wrote {out}" in result.stdout
    requested = open_offline(page, out)
    assert all(url.startswith(("file:", "blob:", "data:")) for url in requested), requested
    viewer = page.evaluate(
        "() => ({ view: window.gradwalkViewer.view, layout: window.gradwalkViewer.graph.lastLayout.layout })"
    )
    assert viewer == {"view": "stepper", "layout": "elk"}  # the layout worker ran from the page itself
    assert page.evaluate("() => window.gradwalkViewer.graph.core.nodes().length") == 5
    position = page.locator(".gw-stepper .gw-position")
    expect(position).to_have_text("step 1 of 5")
    for _ in range(3):
        page.click(NEXT)
    expect(position).to_have_text("step 4 of 5")
    expect(page.locator(".gw-step-card")).to_contain_text("x.grad: None → 14.75")
    assert ".grad 14.75" in page.evaluate(LEAF)
    settle(page)
    shot(page, "export-01-file-stepped-to-leaf")
    page.click("[role=tab][data-view=code]")
    expect(page.locator(".gw-viewer-output")).to_contain_text("tensor(14.7500)")
    expect(page.locator(".gw-code-line.current")).to_contain_text("y = x**3 - 4*x")  # the step's line
    page.click("[role=tab][data-view=tape]")
    expect(page.locator(".gw-op-row")).to_have_count(4)


def test_export_a_stored_run_by_id_at_a_step_dark(page: Any, tmp_path: Path) -> None:
    run_id = stored_run(page.server, CUBIC.read_text())
    out = tmp_path / "page.html"
    db = page.server.log_path.parent / "gradwalk.sqlite3"
    args = [
        "export",
        run_id,
        "--db",
        str(db),
        "-o",
        str(out),
        "--view",
        "graph",
        "--step",
        "3",
        "--theme",
        "dark",
    ]
    result = gradwalk_cli(*args)
    assert result.returncode == 0, result.stderr
    open_offline(page, out)
    assert page.evaluate("() => document.documentElement.dataset.theme") == "dark"
    assert page.title() == "Your first backward() · gradwalk"
    expect(page.locator(".gw-viewer-steps")).to_contain_text("step 4 of 5 · AccumulateGrad")
    assert ".grad 14.75" in page.evaluate(LEAF)
    page.click("button[aria-label='Step forward']")
    expect(page.locator(".gw-viewer-steps")).to_contain_text("step 5 of 5 · end of backward")
    settle(page)
    shot(page, "export-02-run-graph-dark")


def test_the_download_button_saves_a_page_that_opens_offline(page: Any, tmp_path: Path) -> None:
    open_app(page)
    run_example(page, "product")
    page.click("#gw-tab-stepper")
    page.click(".gw-walk-item:has-text('MulBackward0')")
    with page.expect_download() as info:
        page.click("[data-gw=download-html]")
    download = info.value
    run_id = page.evaluate("() => window.gradwalk.runId")
    assert download.suggested_filename == f"gradwalk-{run_id}.html"
    out = tmp_path / download.suggested_filename
    download.save_as(out)
    offline = page.context.new_page()
    try:
        open_offline(offline, out)
        card = offline.locator(".gw-step-card")
        expect(card).to_contain_text("∂c/∂a = grad · b = 1 × 3 = 3")
        offline.click(NEXT)
        offline.click(NEXT)
        expect(card).to_contain_text("b.grad: None → 8")
    finally:
        offline.close()


def test_a_snippet_cannot_break_out_of_the_page(page: Any, tmp_path: Path) -> None:
    from engine.run import record
    from server.export import render_export

    source = '# </script><script>window.pwned = 1</script>\nprint("</script><script>window.pwned = 2</script><!--")\n'
    out = tmp_path / "hostile.html"
    hostile = record(source).model_dump_json()
    # the run compared on the charts is carried in the page the same way
    out.write_text(render_export(hostile, view="code", compare=("hostile", hostile)))
    page.goto(out.as_uri())
    page.wait_for_function("() => window.gradwalkViewer !== undefined")
    assert page.evaluate("() => window.pwned") is None
    expect(page.locator(".gw-stdout")).to_contain_text("</script><script>window.pwned = 2</script><!--")
    expect(page.locator(".gw-code-line").first).to_contain_text(
        "# </script><script>window.pwned = 1</script>"
    )
    assert page.title().startswith("</script><script>")


def test_export_answers(page: Any) -> None:
    run_id = stored_run(page.server, CUBIC.read_text())
    with httpx.Client(base_url=page.server.url, timeout=30) as client:
        ok = client.get(f"/api/runs/{run_id}/export", params={"view": "tape", "step": 2})
        assert ok.status_code == 200
        assert ok.headers["content-type"].startswith("text/html")
        assert ok.headers["content-disposition"] == f'attachment; filename="gradwalk-{run_id}.html"'
        assert '"view": "tape", "step": 2' in ok.text
        assert client.get("/api/runs/0123456789ab/export").status_code == 404
        assert client.get(f"/api/runs/{run_id}/export", params={"view": "nope"}).status_code == 422
        assert client.get(f"/api/runs/{run_id}/export", params={"step": -1}).status_code == 422
    result = gradwalk_cli(
        "export", "0123456789ab", "--db", str(page.server.log_path.parent / "gradwalk.sqlite3")
    )
    assert result.returncode == 2 and "no finished run '0123456789ab'" in result.stderr
    result = gradwalk_cli("export", "nope", "--db", "/nonexistent/gradwalk.sqlite3")
    assert result.returncode == 2 and "no run store at /nonexistent/gradwalk.sqlite3" in result.stderr


def test_without_the_bundle_export_names_make_web(tmp_path: Path, cubic_trace: Path) -> None:
    from server.export import BundleMissing, render_export

    with pytest.raises(BundleMissing, match="make web"):
        render_export(cubic_trace.read_text(), dist=tmp_path)
    with pytest.raises(ValueError, match="not a gradwalk trace"):
        render_export('{"source": ""}')
    trace = cubic_trace.read_text()
    with pytest.raises(ValueError, match="the compared run is not a gradwalk trace"):
        render_export(trace, compare=("cubic", '{"source": ""}'))
    with pytest.raises(ValueError, match="compare must be a run id"):
        render_export(trace, compare=("../cubic\n", trace))
    bad = tmp_path / "bad.json"
    bad.write_text('{"source": "", "events": [{"type": "nope"}]}')
    result = gradwalk_cli("export", str(bad), "-o", str(tmp_path / "x.html"))
    assert result.returncode == 2 and "is not a gradwalk trace" in result.stderr
    assert not (tmp_path / "x.html").exists()
