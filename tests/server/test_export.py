"""Exports carry the charts' choices: ``hide`` in :func:`parse_hide`, ``render_export``, the
export route (``?hide=``) and ``gradwalk export --hide``, against a real server and CLI."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

from server.chart_choices import HIDE_PATTERN, MAX_HIDDEN, hide_text, parse_hide
from server.export import render_export
from tests.conftest import gradwalk_cli
from tests.server.test_api import QUICK, wait_finished

ROOT = Path(__file__).resolve().parents[2]
TRACE = json.dumps({"format": "gradwalk-trace", "source": "", "events": []})


def options_of(page: str) -> dict[str, Any]:
    """The page's ``#gradwalk-options`` JSON, as the viewer reads it."""
    found = re.search(r'<script type="application/json" id="gradwalk-options">(.*?)</script>', page, re.S)
    assert found is not None, page[:300]
    options: dict[str, Any] = json.loads(found.group(1))
    return options


@pytest.fixture()
def dist(tmp_path: Path) -> Path:
    """A stand-in viewer bundle, so that these checks do not need ``make web``."""
    (tmp_path / "viewer.js").write_text("console.log(1);\n")
    (tmp_path / "viewer.css").write_text("body{}\n")
    return tmp_path


# --- parse_hide ----------------------------------------------------------------------------


def test_parse_hide_reads_comma_separated_chart_ids() -> None:
    assert parse_hide(None) == parse_hide("") == []
    assert parse_hide("grad,update,lr") == ["grad", "update", "lr"]
    assert parse_hide("grad, lr ") == ["grad", "lr"]  # as the viewer's parseHide reads it
    assert parse_hide("grad,metric:val_acc,grad") == ["grad", "metric:val_acc"]  # duplicates once
    assert parse_hide("metric:train/loss 2.x-y_z") == ["metric:train/loss 2.x-y_z"]
    # a logged metric's name may hold any character but a control character; its commas
    # and percent signs are written %2C and %25 (hide_text), as the viewer writes them
    assert parse_hide("metric:acc (%),metric:Genauigkeit ü,metric:<b>") == [
        "metric:acc (%)",
        "metric:Genauigkeit ü",
        "metric:<b>",
    ]
    odd = ["metric:top-1, top-5", "metric:acc (%)", "metric:50%2C", "grad"]
    assert hide_text(odd) == "metric:top-1%2C top-5,metric:acc (%25),metric:50%252C,grad"
    assert parse_hide(hide_text(odd)) == odd
    assert parse_hide("metric:a%2cb") == ["metric:a,b"]  # either case, as the viewer reads it
    assert re.fullmatch(HIDE_PATTERN, hide_text(odd))  # the room state's pattern takes it
    many = [f"metric:m{i}" for i in range(MAX_HIDDEN)]
    assert parse_hide(",".join(many)) == many
    assert parse_hide("x" * 128) == ["x" * 128]  # "metric:" and a 100-character name fit
    assert re.fullmatch(HIDE_PATTERN, "") and re.fullmatch(HIDE_PATTERN, ",".join(many))


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("x" * 129, f"'{'x' * 129}' is not a chart id"),
        ("grad,,lr", "'' is not a chart id"),
        ("grad\n", "'grad\\n' is not a chart id"),
        ("metric:a\tb", "'metric:a\\tb' is not a chart id"),
        ("metric:\x7f", "'metric:\\x7f' is not a chart id"),
        (",".join(f"metric:m{i}" for i in range(MAX_HIDDEN + 1)), "at most 32 charts"),
    ],
)
def test_parse_hide_refuses_a_bad_id_by_name(text: str, words: str) -> None:
    with pytest.raises(ValueError, match=re.escape(words)):
        parse_hide(text)
    assert not re.fullmatch(HIDE_PATTERN, text)  # the room state's pattern refuses it too


# --- render_export -------------------------------------------------------------------------


def test_render_export_puts_the_hidden_charts_in_the_options(dist: Path) -> None:
    assert options_of(render_export(TRACE, dist=dist))["hide"] == []
    page = render_export(TRACE, view="charts", hide=["grad", "metric:val_acc", "grad"], dist=dist)
    assert options_of(page)["hide"] == ["grad", "metric:val_acc"]
    assert options_of(render_export(TRACE, hide=("lr",), dist=dist))["hide"] == ["lr"]


@pytest.mark.parametrize(
    ("hide", "words"),
    [
        (["grad", "metric:a\nb"], "is not a chart id"),
        (["y" * 129], "is not a chart id"),
        ([f"metric:m{i}" for i in range(33)], "at most 32 charts"),
        ("grad", "not the string 'grad'"),  # would be read letter by letter
    ],
)
def test_render_export_refuses_bad_hidden_charts(dist: Path, hide: Any, words: str) -> None:
    with pytest.raises(ValueError, match=re.escape(words)):
        render_export(TRACE, hide=hide, dist=dist)


def test_a_metric_named_like_markup_stays_data_in_the_export(dist: Path) -> None:
    hide = ["metric:</script><script>window.pwned = 1</script>", "metric:acc (%)"]
    page = render_export(TRACE, view="charts", hide=hide, dist=dist)
    assert options_of(page)["hide"] == hide
    assert "window.pwned" in page and "</script><script>window.pwned" not in page


# --- the route -----------------------------------------------------------------------------


#: two backward() calls through different graphs
TWO_CALLS = "import torch\nx = torch.tensor(2.0, requires_grad=True)\n(x * x).backward()\n(x + 1).exp().backward()\nprint(x.grad)\n"


def test_the_export_route_draws_the_call_it_is_asked_to(api: httpx.Client) -> None:
    run_id = api.post("/api/runs", json={"source": TWO_CALLS}).raise_for_status().json()["id"]
    assert wait_finished(api, run_id)["status"] == "ok"
    # counted from 1 as the app's links count calls; the page's viewer takes the index
    page = api.get(f"/api/runs/{run_id}/export", params={"view": "graph", "call": 2})
    assert page.status_code == 200, page.text[:300]
    assert options_of(page.text)["call"] == 1
    assert options_of(api.get(f"/api/runs/{run_id}/export").text)["call"] is None
    # every call's graph together, whatever the run's default
    every = api.get(f"/api/runs/{run_id}/export", params={"view": "graph", "call": "all"})
    assert every.status_code == 200, every.text[:300]
    assert options_of(every.text)["call"] == "all"
    for bad in ("0", "-1", "two", "1.5", "ALL", "every"):
        refused = api.get(f"/api/runs/{run_id}/export", params={"call": bad})
        assert refused.status_code == 422, refused.text[:300]
        # a whole number from 1, or all: an error for each, each at the query's call
        assert {tuple(e["loc"][:2]) for e in refused.json()["detail"]} == {("query", "call")}
        assert any(e["msg"] == "Input should be 'all'" for e in refused.json()["detail"])


def test_the_export_route_refuses_a_step_call_or_sel_the_run_has_not(api: httpx.Client) -> None:
    # typed into a URL by an author: the page opened on the last step, the default graph or
    # "not in this trace" without a word, where gradwalk export and notebooks refuse
    run_id = api.post("/api/runs", json={"source": TWO_CALLS}).raise_for_status().json()["id"]
    assert wait_finished(api, run_id)["status"] == "ok"
    export = f"/api/runs/{run_id}/export"
    steps = 6  # MulBackward0, AccumulateGrad, end; ExpBackward0, AddBackward0, AccumulateGrad, end
    last = api.get(export, params={"view": "stepper", "step": steps})
    assert last.status_code == 200, last.text[:300]
    assert options_of(last.text)["step"] == steps
    cases: list[tuple[dict[str, Any], str, str]] = [
        (
            {"step": steps + 1},
            "step",
            f"step {steps + 1} is past the end: this run has {steps + 1} backward steps (0 to {steps})",
        ),
        (
            {"call": 3},
            "call",
            "call 3 is no backward() call whose graph was recorded: the calls recorded in full are 1, 2",
        ),
        ({"sel": "n999"}, "sel", "sel n999: this run made no node 999"),
        ({"sel": "t999"}, "sel", "sel t999: this run made no tensor 999"),
    ]
    for params, name, words in cases:
        refused = api.get(export, params=params)
        assert refused.status_code == 422, (params, refused.text[:300])
        [error] = refused.json()["detail"]
        assert error["loc"] == ["query", name] and words in error["msg"], error
    # every refusal at once, each at its own name
    refused = api.get(export, params={"step": 99, "call": 9, "sel": "t99"})
    assert refused.status_code == 422
    assert [e["loc"][1] for e in refused.json()["detail"]] == ["step", "call", "sel"]
    no_walk = api.post("/api/runs", json={"source": "import torch\nprint(torch.ones(2) * 3)\n"}).json()["id"]
    assert wait_finished(api, no_walk)["status"] == "ok"
    refused = api.get(f"/api/runs/{no_walk}/export", params={"step": 0})
    assert refused.status_code == 422
    assert "this run called no backward(): there is no step 0 to open" in refused.json()["detail"][0]["msg"]
    assert api.get(f"/api/runs/{no_walk}/export").status_code == 200


@pytest.mark.parametrize("call", [0, -2, True, 1.0, "2", "every", "All"])
def test_render_export_refuses_a_call_that_is_not_one(dist: Path, call: Any) -> None:
    with pytest.raises(ValueError, match="call must be a whole number from 1"):
        render_export(TRACE, call=call, dist=dist)


def test_the_export_route_hides_the_charts_it_is_asked_to(api: httpx.Client) -> None:
    run_id = api.post("/api/runs", json={"source": QUICK}).raise_for_status().json()["id"]
    assert wait_finished(api, run_id)["status"] == "ok"
    page = api.get(f"/api/runs/{run_id}/export", params={"view": "charts", "hide": "grad,lr"})
    assert page.status_code == 200, page.text[:300]
    assert options_of(page.text)["hide"] == ["grad", "lr"]
    assert options_of(api.get(f"/api/runs/{run_id}/export").text)["hide"] == []
    assert options_of(api.get(f"/api/runs/{run_id}/export?hide=").text)["hide"] == []
    for bad, words in [
        ("metric:a\tb", "'metric:a\\tb' is not a chart id"),
        ("grad," + "x" * 129, "is not a chart id"),
        (",".join(f"metric:m{i}" for i in range(33)), "at most 32 charts"),
    ]:
        refused = api.get(f"/api/runs/{run_id}/export", params={"hide": bad})
        assert refused.status_code == 422, refused.text[:300]
        [error] = refused.json()["detail"]  # shaped as FastAPI's own validation errors
        assert error["loc"] == ["query", "hide"] and words in error["msg"], error
    # the schema says what the route takes
    hide = next(
        p
        for p in api.get("/openapi.json").json()["paths"]["/api/runs/{run_id}/export"]["get"]["parameters"]
        if p["name"] == "hide"
    )
    assert hide["in"] == "query" and hide["schema"]["pattern"] == HIDE_PATTERN


def test_the_export_route_takes_controls_in_an_embed_s_words_too(api: httpx.Client) -> None:
    # an embed's link writes controls=hide; the same words on its download were a 422
    run_id = api.post("/api/runs", json={"source": QUICK}).raise_for_status().json()["id"]
    assert wait_finished(api, run_id)["status"] == "ok"
    for given, shown in [("hide", False), ("false", False), ("show", True), ("true", True), (None, True)]:
        params = {} if given is None else {"controls": given}
        page = api.get(f"/api/runs/{run_id}/export", params=params)
        assert page.status_code == 200, (given, page.text[:300])
        assert options_of(page.text)["controls"] is shown, given
    refused = api.get(f"/api/runs/{run_id}/export", params={"controls": "maybe"})
    assert refused.status_code == 422 and refused.json()["detail"][0]["loc"][:2] == ["query", "controls"]


# --- gradwalk export -----------------------------------------------------------------------


@pytest.fixture(scope="module")
def quick_trace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from engine.run import record

    path = tmp_path_factory.mktemp("traces") / "quick.trace.json"
    path.write_text(record(QUICK, filename="quick.py").model_dump_json())
    return path


def test_gradwalk_export_hide_writes_the_hidden_charts(quick_trace: Path, tmp_path: Path) -> None:
    out = tmp_path / "out.html"
    result = gradwalk_cli("export", str(quick_trace), "--hide", "grad,metric:val_acc", "-o", str(out))
    assert result.returncode == 0, result.stderr
    assert options_of(out.read_text())["hide"] == ["grad", "metric:val_acc"]
    result = gradwalk_cli("export", str(quick_trace), "-o", str(out))
    assert result.returncode == 0, result.stderr
    assert options_of(out.read_text())["hide"] == []


def test_gradwalk_export_refuses_a_bad_hide(quick_trace: Path, tmp_path: Path) -> None:
    out = tmp_path / "bad.html"
    result = gradwalk_cli("export", str(quick_trace), "--hide", "grad,metric:a\tb", "-o", str(out))
    assert (
        result.returncode == 2
        and "gradwalk export: --hide: 'metric:a\\tb' is not a chart id" in result.stderr
    )
    assert not out.exists()


def test_a_run_that_finished_but_is_not_stored_yet_exports(tmp_path: Path) -> None:
    # between its run_finished and the end of its storing, a run's status already said it
    # finished while the export route answered 409 "still going" (a Download clicked then)
    from engine import record
    from server.app import create_app
    from server.live import LiveRun
    from server.settings import Settings

    trace = record(QUICK)
    frames = [e.model_dump_json() for e in trace.events]
    app = create_app(Settings(db=tmp_path / "runs.sqlite3", workers=1))

    async def check() -> None:
        async with app.router.lifespan_context(app):
            live = app.state.registry.live
            live["done"] = LiveRun(id="done", source=QUICK, device="cpu", title=None, frames=frames)
            live["done"].finish("ok", "", None)
            live["going"] = LiveRun(id="going", source=QUICK, device="cpu", title=None, frames=frames[:3])
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
                done = await client.get("/api/runs/done/export")
                assert done.status_code == 200 and '"run_finished"' in done.text
                going = await client.get("/api/runs/going/export")
                assert going.status_code == 409 and "still going" in going.text
                compared = await client.get("/api/runs/done/export", params={"compare": "going"})
                assert compared.status_code == 404 and "no finished run" in compared.text

    anyio.run(check)


# --- sel: the node or tensor picked --------------------------------------------------------


def test_render_export_carries_the_tensor_picked(dist: Path) -> None:
    assert options_of(render_export(TRACE, dist=dist))["selection"] is None
    page = render_export(TRACE, view="inspector", sel="t3", dist=dist)
    assert options_of(page)["selection"] == {"kind": "tensor", "id": 3}
    assert options_of(render_export(TRACE, sel="n12", dist=dist))["selection"] == {"kind": "node", "id": 12}


@pytest.mark.parametrize("sel", ["x3", "t", "3", "t-1", "n1.5", "T3", " t3", 3, "t" + "9" * 10])
def test_render_export_refuses_a_sel_that_is_not_one(dist: Path, sel: Any) -> None:
    with pytest.raises(ValueError, match=re.escape("sel must name a node (n12) or a tensor (t3)")):
        render_export(TRACE, sel=sel, dist=dist)


def test_the_export_route_opens_on_the_tensor_picked(api: httpx.Client) -> None:
    # the app's Download HTML sends the Inspect tab's tensor as sel=t3: the route dropped it
    run_id = api.post("/api/runs", json={"source": QUICK}).raise_for_status().json()["id"]
    assert wait_finished(api, run_id)["status"] == "ok"
    page = api.get(f"/api/runs/{run_id}/export", params={"view": "inspector", "sel": "t1"})
    assert page.status_code == 200, page.text[:300]
    assert options_of(page.text)["selection"] == {"kind": "tensor", "id": 1}
    for bad in ("x1", "t", "n-1", "t1;"):
        refused = api.get(f"/api/runs/{run_id}/export", params={"sel": bad})
        assert refused.status_code == 422, refused.text[:300]
        [error] = refused.json()["detail"]
        assert error["loc"] == ["query", "sel"], error


def test_gradwalk_export_sel_opens_on_a_tensor_the_run_made(quick_trace: Path, tmp_path: Path) -> None:
    out = tmp_path / "sel.html"
    result = gradwalk_cli("export", str(quick_trace), "--view", "inspector", "--sel", "t0", "-o", str(out))
    assert result.returncode == 0, result.stderr
    assert options_of(out.read_text())["selection"] == {"kind": "tensor", "id": 0}
    missing = tmp_path / "missing.html"
    result = gradwalk_cli("export", str(quick_trace), "--sel", "n9999", "-o", str(missing))
    assert (
        result.returncode == 2 and "gradwalk export: --sel n9999: this run made no node 9999" in result.stderr
    )
    assert not missing.exists()
    result = gradwalk_cli("export", str(quick_trace), "--sel", "w", "-o", str(missing))
    assert result.returncode == 2 and "--sel must name a node (n12) or a tensor (t3)" in result.stderr
