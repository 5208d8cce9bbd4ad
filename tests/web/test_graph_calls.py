"""The graph of one backward() call: a loop recorded in full draws one graph per iteration, all
feeding the same leaves; the graph's "Graph of" list narrows it to one call, follows the
stepper, travels in links and embeds, and stays out of the way where there is one graph."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .conftest import expect, open_app, run_example, shot, stored_run, wait_graph, wait_viewer
from .test_charts import plot_point, wait_chart
from .test_export import open_offline

# three backward() calls, each on a graph of its own (no optimizer: each call is a point of
# the "calls" chart)
LOOP = (
    "import torch\n\nx = torch.tensor(2.0, requires_grad=True)\n"
    "for step in range(3):\n    y = torch.sin(x) * x ** 2\n    y.backward()\n"
)

# the grad_fn nodes drawn (op and AccumulateGrad elements), and each one's node id
DRAWN = "(core) => core.nodes().filter((n) => ['op', 'acc'].includes(n.data('kind'))).map((n) => n.data('node')).sort((a, b) => a - b)"


def _drawn(page: Any) -> list[int]:
    nodes: list[int] = page.evaluate(f"() => ({DRAWN})(window.gradwalk.graph.core)")
    return nodes


def _ran_by(page: Any, call: int) -> list[int]:
    nodes: list[int] = page.evaluate(
        "(i) => [...window.gradwalk.model.backward(i).byNode.keys()].sort((a, b) => a - b)", call
    )
    return nodes


def _wait_drawing_call(page: Any, call: int) -> None:
    """Wait until the graph draws call ``call`` (its index) alone, as the store says."""
    page.wait_for_function("(c) => window.gradwalk.store.state.graphCall === c", arg=call)
    page.wait_for_function(
        "(want) => { const g = window.gradwalk.graph; return !g.busy && JSON.stringify(("
        + DRAWN
        + ")(g.core)) === JSON.stringify(want); }",
        arg=_ran_by(page, call),
    )


def _laid_out_again(page: Any, before: float) -> None:
    page.wait_for_function(
        "(t) => { const g = window.gradwalk.graph; return g.lastLayout && g.lastLayout.at > t && !g.busy; }",
        arg=before,
    )


def _choose(page: Any, value: str) -> None:
    before = page.evaluate("() => window.gradwalk.graph.lastLayout.at")
    page.select_option(".gw-graph-calls select", value)
    _laid_out_again(page, before)
    # every edge is drawn: one routed around a node before the new layout and straight after
    # it kept its old style without its points, and had no endpoints (it vanished)
    undrawn = page.evaluate(
        "() => window.gradwalk.graph.core.edges(':visible').filter((e) => !Number.isFinite(e.renderedSourceEndpoint()?.x)).map((e) => e.id())"
    )
    assert undrawn == []


def test_a_loop_by_hand_draws_one_iterations_graph_and_follows_the_stepper(page: Any) -> None:
    # the tutorial's sin(x) fit: its first 10 backward() calls are recorded in full, each
    # with a graph of its own (13 nodes) feeding the same four AccumulateGrad nodes
    open_app(page)
    run_example(page, "fit_by_hand")
    picker = page.locator(".gw-graph-calls")
    expect(picker).to_be_visible()
    options = picker.locator("option")
    expect(options).to_have_count(11)
    expect(options.first).to_have_text("every call (10)")
    expect(options.nth(3)).to_have_text("call 3 · line 22")
    # ten copies of one graph side by side are a maze: the run opens on its first call,
    # and the link stays the run's (no call=)
    wait_graph(page)
    expect(picker.locator("select")).to_have_value("0")
    expect(page.locator(".gw-graph-info")).to_have_text("13 nodes")
    assert _drawn(page) == _ran_by(page, 0)
    assert page.evaluate("() => window.gradwalk.store.state.graphCall") is None
    assert "call=" not in page.evaluate("() => location.search")
    # every call: the whole fan, and the link says so
    _choose(page, "all")
    everything = _drawn(page)
    assert len(everything) == 94
    expect(page.locator(".gw-graph-info")).to_have_text("94 nodes")
    page.wait_for_function("() => location.search.includes('call=all')")

    _choose(page, "2")
    assert _drawn(page) == _ran_by(page, 2)
    assert len(_drawn(page)) == 13
    expect(page.locator(".gw-graph-info")).to_have_text("13 nodes")
    page.wait_for_function("() => location.search.includes('call=3')")
    # the tape greys the ops that made another call's graph, not call 3's nor those with no node
    greyed = page.evaluate(
        """() => { const m = window.gradwalk.model; const out = {};
            for (const op of m.ops) {
                const row = document.querySelector(`.gw-op-row[data-op="${op.index}"]`);
                // the call an op's graph belongs to: the last to run one of its nodes (a leaf's
                // AccumulateGrad, made by the first iteration's op, runs in every call)
                const ran = op.nodes.map((n) => [...Array(10).keys()].filter((c) => m.backward(c).byNode.has(n)))
                    .filter((calls) => calls.length === 1).map((calls) => calls[0]);
                out[op.index] = [row.classList.contains('elsewhere'), ran.length ? ran[0] : null];
            }
            return out; }"""
    )
    assert {call for grey, call in greyed.values() if grey} == set(range(10)) - {2}
    assert all(grey == (call not in (2, None)) for grey, call in greyed.values())
    # choosing call 9 brings the first op of its graph to the top of the tape (far down a tape
    # whose chunks were never drawn, and so shorter than it is)
    _choose(page, "8")
    first = next(index for index, (grey, call) in greyed.items() if call == 8)
    page.wait_for_function(
        """(i) => { const s = document.querySelector('.gw-tape .gw-scroll').getBoundingClientRect();
            const r = document.querySelector(`.gw-op-row[data-op="${i}"]`).getBoundingClientRect();
            return Math.abs(r.top - s.top) < 3; }""",
        arg=int(first),
    )
    _choose(page, "2")
    shot(page, "graph-calls-01-one-iteration")

    # the stepper at call 5 draws call 5's graph, and the list says so
    page.click("#gw-tab-stepper")
    page.locator(".gw-call", has_text="#5").click()
    _wait_drawing_call(page, 4)
    expect(picker.locator("select")).to_have_value("4")
    current = page.evaluate("() => window.gradwalk.graph.core.nodes('.current').map((n) => n.data('node'))")
    assert current and set(current) <= set(_ran_by(page, 4))
    page.wait_for_function("() => location.search.includes('call=5')")

    # choosing a call in the stepper takes the stepper to its first node
    _choose(page, "7")
    step = page.evaluate("() => window.gradwalk.store.state.step")
    assert page.evaluate("(s) => window.gradwalk.model.timeline[s].backward", step) == 7
    assert page.evaluate("() => window.gradwalk.model.backward(7).entries[0].index") == step

    # a tape row of the first iteration selects what it made: the graph goes to call 1
    page.click("#gw-tab-tape")
    page.locator(".gw-op", has_text="mul").first.click()
    _wait_drawing_call(page, 0)
    expect(picker.locator("select")).to_have_value("0")

    # every call again: the whole fan
    _choose(page, "all")
    assert _drawn(page) == everything
    page.wait_for_function("() => location.search.includes('call=all')")
    # a reload keeps every call; the run's link without call= opens on its first call again
    page.reload()
    wait_graph(page)
    expect(page.locator(".gw-graph-info")).to_have_text("94 nodes")
    expect(picker.locator("select")).to_have_value("all")
    page.goto(page.url.replace("&call=all", "").replace("call=all&", ""))
    wait_graph(page)
    expect(page.locator(".gw-graph-info")).to_have_text("13 nodes")
    expect(picker.locator("select")).to_have_value("0")


def _viewer_draws(target: Any) -> tuple[list[int], list[int]]:
    """The grad_fn nodes a viewer (an embed, an export) draws, and those its call 2 ran."""
    wait_viewer(target)
    drawn: list[int] = target.evaluate(f"() => ({DRAWN})(window.gradwalkViewer.graph.core)")
    ran: list[int] = target.evaluate(
        "() => [...window.gradwalkViewer.model.backward(1).byNode.keys()].sort((a, b) => a - b)"
    )
    assert len(drawn) < target.evaluate("() => window.gradwalkViewer.model.nodes.size")
    return drawn, ran


def test_a_link_an_embed_or_a_download_opens_one_calls_graph_and_a_new_run_draws_every_call(
    page: Any, tmp_path: Path
) -> None:
    run = stored_run(page.server, LOOP)
    page.goto(f"{page.server.url}/?run={run}&view=tape&call=2")
    wait_graph(page)
    _wait_drawing_call(page, 1)
    expect(page.locator(".gw-graph-calls select")).to_have_value("1")

    # a call the run does not have: the run's default, every call for three small graphs,
    # and the link says so
    page.goto(f"{page.server.url}/?run={run}&view=tape&call=9")
    wait_graph(page)
    page.wait_for_function(
        "() => window.gradwalk.store.state.graphCall === null && !location.search.includes('call=')"
    )
    expect(page.locator(".gw-graph-calls select")).to_have_value("all")
    page.goto(f"{page.server.url}/?run={run}&view=tape&call=2")
    _wait_drawing_call(page, 1)

    # an embed of the run with call=2 draws the same graph, and so does the page Download
    # HTML saves
    embed = page.context.new_page()
    try:
        embed.goto(f"{page.server.url}/embed/{run}?view=graph&call=2")
        drawn, ran = _viewer_draws(embed)
        assert drawn == ran
    finally:
        embed.close()
    with page.expect_download() as info:
        page.click("[data-gw=download-html]")
    out = tmp_path / "one-call.html"
    info.value.save_as(out)
    offline = page.context.new_page()
    try:
        open_offline(offline, out)
        drawn, ran = _viewer_draws(offline)
        assert drawn == ran
        expect(offline.locator(".gw-graph-calls select")).to_have_value("1")
    finally:
        offline.close()
        page.context.unroute("**/*")  # open_offline refused the network to the whole context

    # a new run starts from every call; one backward() has nothing to choose
    run_example(page, "cubic")
    assert page.evaluate("() => window.gradwalk.store.state.graphCall") is None
    expect(page.locator(".gw-graph-calls")).to_be_hidden()
    assert "call=" not in page.evaluate("() => location.search")


def test_a_charts_call_opens_its_own_graph_and_walk(page: Any) -> None:
    # issue #6: a click on a step recorded in full opens its graph and backward walk; with a
    # graph per call, "its graph" is that call's alone
    run = stored_run(page.server, LOOP)
    page.goto(f"{page.server.url}/?run={run}&view=charts")
    wait_chart(page, "calls", 3)
    assert page.evaluate("() => window.gradwalk.store.state.graphCall") is None
    x, y = plot_point(page, "calls", 1)
    page.mouse.click(x, y)
    expect(page.locator("#gw-tab-stepper")).to_have_attribute("aria-selected", "true")
    _wait_drawing_call(page, 1)
    step = page.evaluate("() => window.gradwalk.store.state.step")
    assert page.evaluate("() => window.gradwalk.model.backward(1).entries[0].index") == step


def test_an_embed_opens_a_loop_on_its_first_call_and_call_all_on_every_call(page: Any) -> None:
    # a course page embeds the tutorial's fit by hand without choosing: one iteration's
    # graph, as the app opens it; call=all (the app's link once every call is chosen) the fan
    source = (Path(__file__).parents[2] / "server" / "examples" / "fit_by_hand.py").read_text()
    run = stored_run(page.server, source)
    for query, count, chosen in (
        ("view=graph", 13, "0"),
        ("view=graph&call=all", 94, "all"),
        ("view=graph&call=4", 13, "3"),
    ):
        page.goto(f"{page.server.url}/embed/{run}?{query}")
        wait_viewer(page)
        page.wait_for_function(
            "(n) => { const g = window.gradwalkViewer.graph; return !g.busy && ("
            + DRAWN
            + ")(g.core).length === n; }",
            arg=count,
        )
        expect(page.locator(".gw-graph-calls select")).to_have_value(chosen)


def test_a_link_to_one_call_on_the_backward_tab_opens_that_calls_walk(page: Any) -> None:
    # the stepper is the tab a run with backward() opens on: a link's call=2 there opened
    # step 1 of call 1 and drew call 1's graph, as step 1 belongs to call 1 (embeds, exports,
    # notebooks' show(call=2) and the app's view=stepper links alike)
    run = stored_run(page.server, LOOP)
    for url, app in (
        (f"/embed/{run}?call=2", "gradwalkViewer"),
        (f"/?run={run}&view=stepper&call=2", "gradwalk"),
    ):
        page.goto(page.server.url + url)
        page.wait_for_function(f"() => window.{app}?.model?.isFinished")
        page.wait_for_function(f"() => window.{app}.store.state.graphCall === 1")
        first = page.evaluate(f"() => window.{app}.model.backward(1).entries[0].index")
        page.wait_for_function(f"(s) => window.{app}.store.state.step === s", arg=first)
        expect(page.locator(".gw-graph-calls select")).to_have_value("1")
        expect(page.locator(".gw-step-bar .gw-position")).to_contain_text("backward 2: 1 of")
    # a call the run never made: the run's default (every call's), and the page says so
    page.goto(f"{page.server.url}/embed/{run}?call=9")
    wait_viewer(page)
    page.wait_for_function("() => window.gradwalkViewer.store.state.graphCall === null")
    expect(page.locator(".gw-graph-calls select")).to_have_value("all")
    expect(page.locator("body")).to_contain_text(
        "This link draws backward call 9, but this run made 3 backward calls"
    )
    # the app says the same: its output, as for a step past the end (it said nothing)
    page.goto(f"{page.server.url}/?run={run}&view=stepper&call=9")
    page.wait_for_function("() => window.gradwalk?.model?.isFinished")
    expect(page.locator(".gw-output")).to_contain_text(
        "This link draws backward call 9, but this run made 3 backward calls: showing the graph it opens on."
    )


def test_a_link_to_a_call_recorded_metrics_only_says_it_draws_the_default(page: Any) -> None:
    # fit_by_hand records its first 10 calls of 200 in full: call=99 drew call 1 without a word
    source = (Path(__file__).parents[2] / "server" / "examples" / "fit_by_hand.py").read_text()
    run = stored_run(page.server, source)
    said = "This link draws backward call 99, but this run recorded calls 1 to 10 in full (the rest metrics-only)"
    page.goto(f"{page.server.url}/?run={run}&view=tape&call=99")
    page.wait_for_function("() => window.gradwalk?.model?.isFinished")
    expect(page.locator(".gw-output")).to_contain_text(said)
    page.wait_for_function("() => window.gradwalk.store.state.graphCall === null")
    page.goto(f"{page.server.url}/embed/{run}?call=99")
    wait_viewer(page)
    expect(page.locator("body")).to_contain_text(said)
    # a call it recorded in full says nothing
    page.goto(f"{page.server.url}/?run={run}&view=tape&call=3")
    page.wait_for_function("() => window.gradwalk?.model?.isFinished")
    page.wait_for_function("() => window.gradwalk.store.state.graphCall === 2")
    expect(page.locator(".gw-output")).not_to_contain_text("This link draws")
