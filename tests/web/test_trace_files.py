"""Open trace… in real Chromium: a file cut short, a file that is not a trace, the examples list."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from .conftest import expect, open_app, run_example, wait_graph

pytestmark = pytest.mark.browser


def stored_trace(page: Any) -> dict[str, Any]:
    """The trace of the run the app shows, as the server stores it."""
    run_id = page.evaluate("() => window.gradwalk.runId")
    with httpx.Client(base_url=page.server.url, timeout=30) as client:
        trace: dict[str, Any] = client.get(f"/api/runs/{run_id}/trace").json()
    return trace


def test_a_trace_cut_short_opens_as_cut_short_and_leaves_run_free(page: Any, tmp_path: Path) -> None:
    # A file without run_finished (a recording cut short) left the app "running…" for good:
    # Run disabled, and Stop with no run to stop.
    open_app(page)
    run_example(page, "cubic")
    trace = stored_trace(page)
    trace["events"] = [e for e in trace["events"] if e["type"] != "run_finished"]
    cut = tmp_path / "cut.json"
    cut.write_text(json.dumps(trace))
    page.set_input_files("[data-gw=open-trace]", str(cut))
    wait_graph(page)
    status = page.locator("[data-gw=status]")
    expect(status).to_have_attribute("data-state", "cut-short")
    expect(status).to_have_text("cut short")
    expect(page.locator("[data-gw=run]")).to_be_enabled()
    expect(page.locator("[data-gw=stop]")).to_be_disabled()
    expect(page.get_by_text("This trace ends before its run finished")).to_be_visible()
    # what it holds is shown: the walk to the leaf
    assert page.evaluate("() => window.gradwalk.model.timeline.length") > 0
    page.click("[data-gw=run]")  # and the next run runs
    expect(status).to_have_attribute("data-state", "ok", timeout=60_000)


def test_a_file_with_a_null_event_is_refused_in_words(page: Any, tmp_path: Path) -> None:
    # "Cannot read properties of null (reading 'seq')"
    open_app(page)
    run_example(page, "cubic")
    trace = stored_trace(page)
    trace["events"][1] = None
    bad = tmp_path / "holes.json"
    bad.write_text(json.dumps(trace))
    page.set_input_files("[data-gw=open-trace]", str(bad))
    expect(
        page.get_by_text("Could not open holes.json: not a gradwalk trace (event 1 has no seq and type)")
    ).to_be_visible()
    expect(page.locator("[data-gw=status]")).to_have_attribute("data-state", "ok")  # the run on screen stays


def test_the_examples_list_names_the_example_a_file_holds_and_no_other(page: Any, tmp_path: Path) -> None:
    # After a file replaced the code, the list still named the example the code came from.
    open_app(page)
    run_example(page, "cubic")
    cubic = stored_trace(page)
    run_example(page, "small_net")
    own = json.loads(json.dumps(cubic).replace("x = torch.tensor(2.5", "x = torch.tensor(3.5"))
    assert own != cubic
    for name, trace, shown in (("own.json", own, ""), ("cubic.json", cubic, "cubic")):
        path = tmp_path / name
        path.write_text(json.dumps(trace))
        page.set_input_files("[data-gw=open-trace]", str(path))
        expect(page.locator("[data-gw=examples]")).to_have_value(shown)
