"""Two runs on one set of charts, in a real Chromium against a real server: the run before
drawn dashed under the run on screen, in the app, links, embeds, downloads and exports."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from typing import Any

import httpx
import pytest

from .conftest import expect, open_app, run_source, shot, stored_run
from .test_charts import MANUAL_GD, SNAPSHOT, example, plot_point, trace, wait_chart

pytestmark = pytest.mark.browser

VIEWER = "() => window.gradwalkViewer && window.gradwalkViewer.charts.snapshot()"
TOGGLE = "input[aria-label='Compare with the run before']"
RENT = example("rent_regression")
SLOWER = RENT.replace("lr=0.05", "lr=0.01")


def losses(data: dict[str, Any]) -> list[float]:
    """The loss of every optimizer step of a stored trace, as the engine recorded it."""
    return [e["loss"] for e in data["events"] if e["type"] == "optimizer_step"]


def compared(page: Any, chart: str, snapshot: str = SNAPSHOT) -> dict[str, Any]:
    """Wait until `chart` is drawn with a compared run; return its snapshot."""
    page.wait_for_function(
        f"(id) => {{ const c = ({snapshot})()?.[id]; return c && c.compared && c.drawn > 0; }}", arg=chart
    )
    snap: dict[str, Any] = page.evaluate(snapshot)[chart]
    return snap


def dashed_labels(page: Any, chart: str, root: str = "window.gradwalk.charts") -> list[str]:
    labels: list[str] = page.evaluate(
        f"(id) => {root}.plotOf(id).series.slice(1).filter((s) => s.dash).map((s) => s.label)", chart
    )
    return labels


@pytest.fixture(scope="module")
def pair(server: Any) -> dict[str, str]:
    """The rent regression at lr=0.05 and again at lr=0.01, stored."""
    return {"fast": stored_run(server, RENT), "slow": stored_run(server, SLOWER)}


def test_the_run_before_is_drawn_dashed_and_named_by_its_change(page: Any) -> None:
    open_app(page)
    run_source(page, RENT)
    first = page.evaluate("() => window.gradwalk.runId")
    page.click("#gw-tab-charts")
    expect(page.locator(TOGGLE)).to_be_hidden()  # nothing ran before it
    run_source(page, SLOWER)
    second = page.evaluate("() => window.gradwalk.runId")
    wait_chart(page, "loss", 400)
    expect(page.locator(TOGGLE)).to_be_visible()
    expect(page.locator(TOGGLE)).not_to_be_checked()
    assert compared_or_none(page, "loss") is None

    page.check(TOGGLE)
    snap = compared(page, "loss")
    server = page.server
    # the dashed line is the first run's loss, step by step; the solid one this run's
    assert snap["compared"]["series"][0]["values"] == losses(trace(server, first))
    assert snap["series"][0]["values"] == losses(trace(server, second))
    assert dashed_labels(page, "loss") == ["opt (SGD) (run before)"]
    expect(page.locator(".gw-charts-compare-what")).to_have_text("dashed: line 11: lr=0.05 → lr=0.01")
    expect(page.locator("[data-chart=loss] .gw-chart-legend")).to_contain_text("this run")
    expect(page.locator("[data-chart=loss] .gw-chart-legend")).to_contain_text("run before")
    page.wait_for_function("(id) => location.search.includes(`compare=${id}`)", arg=first)
    # hovering reads both runs at that step
    x, y = plot_point(page, "loss", 200)
    page.mouse.move(x, y)
    expect(page.locator("[data-chart=loss] .gw-chart-readout")).to_contain_text("run before")
    shot(page, "compare-01-learning-rates")

    # the memory chart, too, and the learning rate's two levels
    lr = compared(page, "lr")
    assert set(lr["compared"]["series"][0]["values"]) == {0.05} and set(lr["series"][0]["values"]) == {0.01}

    # a reload fetches the compared run from the server
    page.reload()
    snap = compared(page, "loss")
    assert snap["compared"]["series"][0]["values"] == losses(trace(server, first))
    expect(page.locator(TOGGLE)).to_be_checked()
    # the legend's chip hides the dashed lines; the box takes them away, and out of the link
    page.click("[data-chart=loss] .gw-chart-chip:has-text('run before')")
    assert page.evaluate("() => window.gradwalk.charts.plotOf('loss').series.at(-1).show") is False
    page.uncheck(TOGGLE)
    page.wait_for_function("() => !location.search.includes('compare=')")
    page.wait_for_function(f"() => ({SNAPSHOT})().loss.compared === null")
    assert dashed_labels(page, "loss") == []


def compared_or_none(page: Any, chart: str) -> Any:
    return page.evaluate(SNAPSHOT)[chart]["compared"]


def run_then_compare(page: Any, first: str, second: str) -> str:
    """Run ``first``, then ``second``, in the app and tick *compare with the run before* on the
    charts; return the first run's id."""
    open_app(page)
    run_source(page, first)
    first_id: str = page.evaluate("() => window.gradwalk.runId")
    run_source(page, second)
    page.click("#gw-tab-charts")
    page.check(TOGGLE)
    return first_id


def comparing_two_runs(page: Any) -> str:
    """Run the rent regression at lr=0.05, then at lr=0.01, and compare them on the charts;
    return the second run's id."""
    run_then_compare(page, RENT, SLOWER)
    compared(page, "loss")
    second: str = page.evaluate("() => window.gradwalk.runId")
    return second


def test_a_new_run_compares_with_the_one_it_replaced(page: Any) -> None:
    second = comparing_two_runs(page)
    run_source(page, RENT.replace("lr=0.05", "lr=0.02"))
    # the comparison moved on: the run before is now the lr=0.01 one
    page.wait_for_function("(id) => location.search.includes(`compare=${id}`)", arg=second)
    expect(page.locator(".gw-charts-compare-what")).to_have_text("dashed: line 11: lr=0.01 → lr=0.02")
    snap = compared(page, "loss")
    assert snap["compared"]["series"][0]["values"] == losses(trace(page.server, second))
    # a run with nothing to chart (no step, no saved tensor) is not offered: after one, the
    # comparison ends
    run_source(page, "import torch\nx = torch.ones(2, requires_grad=True)\ny = (x + 1).sum()\n")
    run_source(page, RENT)
    expect(page.locator(TOGGLE)).to_be_hidden()
    page.wait_for_function("() => !location.search.includes('compare=')")


def test_a_trace_file_opened_compares_with_the_run_it_replaced(page: Any, tmp_path: Any) -> None:
    server = page.server
    saved = tmp_path / "lr-0.02.json"
    saved.write_text(json.dumps(trace(server, stored_run(server, RENT.replace("lr=0.05", "lr=0.02")))))
    second = comparing_two_runs(page)
    page.set_input_files("[data-gw=open-trace]", str(saved))
    # the file replaced the lr=0.01 run: that is the run before now, as after a new run
    expect(page.locator(".gw-charts-compare-what")).to_have_text("dashed: line 11: lr=0.01 → lr=0.02")
    snap = compared(page, "loss")
    assert snap["compared"]["series"][0]["values"] == losses(trace(server, second))
    assert snap["series"][0]["values"] == losses(json.loads(saved.read_text()))
    page.wait_for_function("(id) => location.search.includes(`compare=${id}`)", arg=second)
    # a file that is not a trace is refused, and the run on screen stays
    bad = tmp_path / "notes.json"
    bad.write_text('{"loss": [1, 2]}')
    page.set_input_files("[data-gw=open-trace]", str(bad))
    expect(page.get_by_text("Could not open notes.json: not a gradwalk trace (no events)")).to_be_visible()
    # opened again (or anything else said): the new message replaces the old, no pile
    page.evaluate("() => { for (const n of document.querySelectorAll('.gw-notice')) n.dataset.first = '1'; }")
    page.set_input_files("[data-gw=open-trace]", str(bad))
    page.wait_for_function("() => [...document.querySelectorAll('.gw-notice')].some((n) => !n.dataset.first)")
    expect(page.get_by_text("Could not open notes.json")).to_have_count(1)
    assert compared(page, "loss")["series"][0]["values"] == losses(json.loads(saved.read_text()))


def test_a_chart_only_the_run_before_has_is_drawn_dashed_alone(page: Any) -> None:
    logged = RENT.replace(
        "    opt.step()\n", "    opt.step()\n    gradwalk.log('w', model.weight.item())\n"
    ).replace("import torch\n", "import torch\nimport gradwalk\n", 1)
    assert logged.count("gradwalk") == 2
    first = run_then_compare(page, logged, RENT)
    # the metric the first run logged has a chart of its own: the dashed line, and nothing of this run
    snap = compared(page, "metric:w")
    ws = [e["value"] for e in trace(page.server, first)["events"] if e["type"] == "metric"]
    assert len(ws) == 400 and snap["compared"]["series"][0]["values"] == ws
    assert snap["series"] == []
    expect(page.locator("[data-chart='metric:w'] .gw-chart-readout")).to_have_text(
        "only the run before (dashed) has this chart"
    )
    # the change is named as the lines taken out, not as every line below the first changed
    expect(page.locator(".gw-charts-compare-what")).to_have_text(
        "dashed: line 2 removed: import gradwalk (and 1 more line)"
    )
    # the charts both runs have are compared as ever; and it goes with the comparison
    assert compared(page, "loss")["compared"]["series"][0]["values"]
    page.uncheck(TOGGLE)
    expect(page.locator("[data-chart='metric:w']")).to_have_count(0)
    assert "metric:w" not in page.evaluate(SNAPSHOT)
    # a new run that logs it again has the chart as its own; the run before it had none
    page.check(TOGGLE)
    compared(page, "metric:w")
    run_source(page, logged)
    snap = wait_chart(page, "metric:w", 400)["metric:w"]
    assert snap["series"][0]["values"] == ws and snap["compared"] is None
    expect(page.locator("[data-chart='metric:w']")).to_have_count(1)


# the update written out (test_charts.MANUAL_GD), and torch.optim.SGD doing the same
WITH_SGD = MANUAL_GD.replace("for step", "opt = torch.optim.SGD([w, b], lr=0.1)\nfor step").replace(
    "    with torch.no_grad():\n        w -= 0.1 * w.grad\n        b -= 0.1 * b.grad\n"
    "        w.grad.zero_()\n        b.grad.zero_()\n",
    "    opt.step()\n    opt.zero_grad()\n",
)


def test_a_loop_that_steps_by_hand_and_its_optimizer_twin_share_one_loss_chart(page: Any) -> None:
    # a lesson's classic: the update written out, then torch.optim.SGD doing the same
    assert WITH_SGD.count("opt.") == 2 and "w.grad.zero_()" not in WITH_SGD
    first = run_then_compare(page, MANUAL_GD, WITH_SGD)
    snap = compared(page, "loss")
    events = trace(page.server, first)["events"]
    values = {e["id"]: e["value"] for e in events if e["type"] == "tensor"}
    # the first 10 calls recorded in full (their roots' values), then each call's counted loss
    losses = {e["index"]: values[e["roots"][0]]["flat"][0] for e in events if e["type"] == "backward_started"}
    losses |= {e["index"]: e["loss"] for e in events if e["type"] == "backward_counted"}
    by_hand = [losses[i] for i in range(30)]
    assert len(losses) == 30
    # the hand-written loop's losses (one per backward() call) dashed under the optimizer's
    assert snap["compared"]["series"][0]["values"] == by_hand
    assert snap["series"][0]["values"] == pytest.approx(
        by_hand, rel=1e-5
    )  # the same descent (float32 rounding aside)
    # one loss chart, not the optimizer's beside a dashed-only "calls" chart
    assert "calls" not in page.evaluate(SNAPSHOT)
    expect(page.locator("[data-chart]")).to_have_count(len(page.evaluate(SNAPSHOT)))
    expect(page.locator("[data-chart='loss'] .gw-chart-readout")).not_to_contain_text("only the run before")


def test_a_kept_graph_beside_its_fix_on_one_memory_chart(page: Any, server: Any) -> None:
    total = example("pitfall_loss_tensor_total")
    kept = stored_run(server, total)
    fixed = stored_run(server, total.replace("    total += loss ", "    total += loss.item() "))
    page.set_viewport_size({"width": 1280, "height": 800})
    page.goto(f"{server.url}/?run={fixed}&view=charts&compare={kept}")
    snap = compared(page, "memory")
    before = [v for v in snap["compared"]["series"][0]["values"] if v is not None]
    now = [v for v in snap["series"][0]["values"] if v is not None]
    assert before[-1] > 10 * max(now), (before[-1], max(now))
    expect(page.locator("[data-chart=memory] .gw-chart-foot")).to_contain_text("this run: ")
    expect(page.locator("[data-chart=memory] .gw-chart-foot")).to_contain_text("floor steady at")
    expect(page.locator("[data-chart=memory] .gw-chart-foot-base")).to_contain_text(
        "run before (dashed): first 12 KiB"
    )
    expect(page.locator("[data-chart=memory] .gw-chart-foot-base")).to_contain_text("memory is kept")
    expect(page.locator(".gw-charts-compare-what")).to_have_text("dashed: line 12: loss → loss.item()")
    shot(page, "compare-02-memory-kept-and-fixed")


@pytest.mark.parametrize("with_run", [False, True], ids=["alone", "beside a run"])
def test_a_run_that_cannot_be_compared_says_why(
    page: Any, request: pytest.FixtureRequest, with_run: bool
) -> None:
    # Beside a run (?run=ID&compare=missing) the note was hidden as the run loaded, and the
    # missing run was then offered as "the run before" to compare with.
    request.node.allow_console_errors = True  # Chromium logs the 404 of the missing run
    run = f"run={stored_run(page.server, RENT)}&" if with_run else ""
    page.goto(f"{page.server.url}/?{run}view=charts&compare=nosuchrun")
    if with_run:
        page.wait_for_function("() => window.gradwalk.model.isFinished")
        page.wait_for_timeout(300)  # the charts have drawn the run
    expect(page.locator(".gw-charts-note")).to_contain_text("Could not load run nosuchrun to compare with")
    page.wait_for_function("() => !location.search.includes('compare=')")
    expect(page.locator(TOGGLE)).not_to_be_checked()
    expect(page.locator(TOGGLE)).to_be_hidden()  # there is no run before to offer


def test_embeds_downloads_and_exports_carry_the_compared_run(
    page: Any, pair: dict[str, str], tmp_path: Any
) -> None:
    server = page.server
    want = losses(trace(server, pair["fast"]))
    # the app's embed code
    page.goto(f"{server.url}/?run={pair['slow']}&view=charts&compare={pair['fast']}")
    compared(page, "loss")
    page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=server.url)
    page.click("[data-gw=copy-embed]")
    expect(page.locator("[data-gw=copy-embed]")).to_have_attribute("data-done", "copied")
    code = page.evaluate("() => navigator.clipboard.readText()")
    assert f"/embed/{pair['slow']}?view=charts&amp;compare={pair['fast']}" in code, code

    # an embed fetches the compared run from its server
    page.goto(f"{server.url}/embed/{pair['slow']}?view=charts&compare={pair['fast']}")
    snap = compared(page, "loss", VIEWER)
    assert snap["compared"]["series"][0]["values"] == want
    assert dashed_labels(page, "loss", "window.gradwalkViewer.charts") == ["opt (SGD) (run before)"]
    expect(page.locator(".gw-viewer-open")).to_have_attribute("href", re.compile(f"compare={pair['fast']}"))

    # a downloaded page carries it inline
    with httpx.Client(base_url=server.url, timeout=60) as client:
        url = f"/api/runs/{pair['slow']}/export"
        got = client.get(url, params={"view": "charts", "compare": pair["fast"]})
        assert got.status_code == 200 and 'id="gradwalk-compare"' in got.text
        missing = client.get(url, params={"compare": "nosuchrun"})
        assert missing.status_code == 404 and "no finished run 'nosuchrun' to compare with" in missing.text
        assert client.get(url, params={"compare": "../x"}).status_code == 422
    out = tmp_path / "pair.html"
    out.write_text(got.text)
    page.goto(out.resolve().as_uri())
    snap = compared(page, "loss", VIEWER)
    assert snap["compared"]["series"][0]["values"] == want
    expect(page.locator(".gw-charts-compare-what")).to_have_text("dashed: line 11: lr=0.05 → lr=0.01")

    # and `gradwalk export --compare`, from the store or a trace file
    db = str(server.log_path.parent / "gradwalk.sqlite3")
    cli = [
        sys.executable,
        "-m",
        "gradwalk.cli",
        "export",
        pair["slow"],
        "--db",
        db,
        "-o",
        str(out),
        "--view",
        "charts",
    ]
    done = subprocess.run([*cli, "--compare", pair["fast"]], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    page.goto(out.resolve().as_uri())
    assert compared(page, "loss", VIEWER)["compared"]["series"][0]["values"] == want
    fast = tmp_path / "fast.json"
    fast.write_bytes(httpx.get(f"{server.url}/api/runs/{pair['fast']}/trace", timeout=30).content)
    done = subprocess.run([*cli, "--compare", str(fast)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert '"compare": "fast"' in out.read_text()
    page.goto(out.resolve().as_uri())
    assert compared(page, "loss", VIEWER)["compared"]["series"][0]["values"] == want
    done = subprocess.run([*cli, "--compare", "nosuchrun"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "--compare: no finished run 'nosuchrun'" in done.stderr
