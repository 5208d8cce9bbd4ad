"""Review 52: four things reviewers left, in real Chromium against a real server.

A first accumulation into a small `.grad` read `x.grad: 0 + [18, 36] → [18, 36]` (a 0 that
never was) where a large one read `None → ‖·‖ …`; a parameter whose `.grad` vector its
hexagon shortens to a norm had the vector nowhere on hover; a lesson that says nothing of
the charts threw away the learner's own chart choices; and the vanishing-gradients lesson's
per-parameter legend (20 parameters) scrolled at 1280 × 720. Then, from screenshots at
1280 × 720: AccumulateGrad's `.grad` edge stayed grey at the step that writes into it.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from .conftest import ROOT, expect, open_app, open_stepper, settle, shot, stored_run

pytestmark = pytest.mark.browser

EXAMPLES = ROOT / "server" / "examples"
POSITION = ".gw-stepper .gw-position"

# a vector's .grad set, then added to; a scalar's three times (the 4 → 8 → 12 lesson)
VECTOR_AND_SCALAR = """import torch
x = torch.tensor([1.0, 2.0], requires_grad=True)
w = torch.tensor(2.0, requires_grad=True)
for _ in range(2):
    (9 * x * x).sum().backward()
for _ in range(3):
    (w * w).backward()
"""


def _accumulation_lines(page: Any) -> list[str]:
    """Every step card's accumulation lines, stepping the whole walk, in order, once each."""
    steps = page.evaluate("() => window.gradwalk.model.timeline.length")
    seen: list[str] = []
    for step in range(steps):
        page.evaluate("(s) => window.gradwalk.store.set({ step: s })", step)
        expect(page.locator(POSITION)).to_contain_text(f"step {step + 1} of {steps}")
        for text in page.locator(".gw-step-card .gw-acc").all_inner_texts():
            if text not in seen:
                seen.append(text)
    return seen


def _tap_tensor_node(page: Any, label_start: str) -> None:
    """Click (as a tap) the graph node whose label starts with `label_start`."""
    page.evaluate(
        """(start) => { const cy = window.gradwalk.graph.core;
            cy.nodes().filter((n) => String(n.data('label')).startsWith(start)).emit('tap'); }""",
        label_start,
    )


def test_a_first_accumulation_reads_none_and_a_second_its_sum(page: Any) -> None:
    open_stepper(page, VECTOR_AND_SCALAR)
    lines = _accumulation_lines(page)
    assert lines == [
        "x.grad: None → [18, 36]",
        "x.grad: [18, 36] + [18, 36] → [36, 72]",
        "w.grad: None → 4",
        "w.grad: 4 + 4 → 8",
        "w.grad: 8 + 4 → 12",
    ], lines
    # the inspector's list of accumulations says the same
    page.click("#gw-tab-inspector")
    _tap_tensor_node(page, "w")
    items = page.locator(".gw-inspector-body .gw-acc-list li")
    expect(items).to_have_count(3)
    assert items.all_inner_texts() == [
        "backward 3: None → 4",
        "backward 4: 4 + 4 → 8",
        "backward 5: 8 + 4 → 12",
    ], items.all_inner_texts()


# The tooltip the graph's canvas shows while the pointer is on parameter `name`'s node.
HOVER_TIP = """(name) => {
    const cy = window.gradwalk.graph.core;
    const node = cy.nodes('[kind = "param"]').filter((n) => String(n.data('label')).startsWith(name + '\\n'));
    node.emit('mouseover');
    const tip = cy.container().title;
    node.emit('mouseout');
    return [node.data('label'), tip, cy.container().title];
}"""


def test_a_parameter_whose_grad_reads_as_a_norm_shows_the_vector_on_hover(page: Any) -> None:
    # small_net's fc2.bias: its hexagon holds `‖·‖ 0.00445`, not [−0.00148, −0.004197]
    open_stepper(page, (EXAMPLES / "small_net.py").read_text())
    steps = page.evaluate("() => window.gradwalk.model.timeline.length")
    page.evaluate("(s) => window.gradwalk.store.set({ step: s })", steps - 1)
    expect(page.locator(POSITION)).to_contain_text(f"step {steps} of {steps}")
    label, tip, after = page.evaluate(HOVER_TIP, "net.fc2.bias")
    assert label.endswith(".grad ‖·‖ 0.00445"), label
    assert tip == "net.fc2.bias · [2]\n.grad at this step: [−0.00148, −0.004197]", tip
    assert after.startswith("Arrow keys move between nodes"), after  # the pointer gone, the keys' hint
    # a .grad too big to print: its shape and norm
    _, tip, _ = page.evaluate(HOVER_TIP, "net.fc1.bias")
    assert tip == "net.fc1.bias · [16]\n.grad at this step: [16] ‖·‖ 0.01634", tip
    # before the walk reached it, None
    page.evaluate("() => window.gradwalk.store.set({ step: 0 })")
    expect(page.locator(POSITION)).to_contain_text(f"step 1 of {steps}")
    _, tip, _ = page.evaluate(HOVER_TIP, "net.fc2.bias")
    assert tip == "net.fc2.bias · [2]\n.grad at this step: None", tip
    # out of the stepper, as the run left it; the inspector shows both numbers too
    page.click("#gw-tab-inspector")
    _, tip, _ = page.evaluate(HOVER_TIP, "net.fc2.bias")
    assert tip == "net.fc2.bias · [2]\n.grad at the end of the run: [−0.00148, −0.004197]", tip
    _tap_tensor_node(page, "net.fc2.bias\n")
    body = page.locator(".gw-inspector-body")
    expect(body).to_contain_text(".grad (at the end of the run)")
    expect(body).to_contain_text("−0.00148")
    expect(body).to_contain_text("−0.004197")
    expect(body.locator(".gw-acc-list li")).to_have_text(["backward 1: None → [−0.00148, −0.004197]"])


def _chart_choices(page: Any) -> dict[str, Any]:
    return page.evaluate(
        """() => { const s = window.gradwalk.store.state;
                   return { perParam: s.perParam, yscale: s.yscale, hide: [...s.hide] }; }"""
    )


def _open_lesson_from_gallery(page: Any, lesson: str) -> None:
    """Open `lesson` from the gallery and wait until its run is the one shown (the card
    changes first, while the run before is still on screen)."""
    before = page.evaluate("() => window.gradwalk.runId")
    page.click("[data-gw=lessons]")
    page.click(f"[data-lesson={lesson}]")
    expect(page.locator("[data-gw=lesson-card]")).to_have_attribute("data-lesson", lesson)
    page.wait_for_function(
        "(before) => window.gradwalk.runId !== before && window.gradwalk.model.isFinished", arg=before
    )


def test_a_lesson_that_says_nothing_of_the_charts_keeps_the_learners_choices(page: Any) -> None:
    # the learner ticks per parameter and picks a linear y scale on a run of their own
    run = stored_run(page.server, (EXAMPLES / "clean_training.py").read_text())
    open_app(page, f"?run={run}&view=charts")
    page.wait_for_function("() => window.gradwalk.model.isFinished")
    page.check('input[aria-label="Norms per parameter"]')
    page.select_option('select[aria-label="Y scale"]', "linear")
    own = {"perParam": True, "yscale": "linear", "hide": []}
    assert _chart_choices(page) == own
    # a lesson without "charts" leaves them be (they were reset to together, auto)
    _open_lesson_from_gallery(page, "scalar")
    assert _chart_choices(page) == own
    # dead-relu sets its own; the learner then picks auto there
    _open_lesson_from_gallery(page, "dead-relu")
    assert _chart_choices(page) == {"perParam": True, "yscale": "log", "hide": ["loss", "lr"]}
    page.select_option('select[aria-label="Y scale"]', "auto")
    # the next lesson without "charts" undoes what dead-relu imposed (loss and lr shown
    # again), back to the learner's own, and keeps the auto the learner chose since
    _open_lesson_from_gallery(page, "chain-rule")
    assert _chart_choices(page) == {"perParam": True, "yscale": "auto", "hide": []}
    page.click("#gw-tab-charts")
    expect(page.locator('input[aria-label="Norms per parameter"]')).to_be_checked()
    expect(page.locator('select[aria-label="Y scale"]')).to_have_value("auto")
    # and one more lesson without: nothing left to undo, nothing changes
    _open_lesson_from_gallery(page, "accumulate")
    assert _chart_choices(page) == {"perParam": True, "yscale": "auto", "hide": []}
    settle(page)
    shot(page, "review52-03-lesson-keeps-chart-choices")


# The gradient chart's legend: how far it scrolls, and each chip: its text, whether it lies
# inside the legend's box (in view without scrolling), whether its name is cut, its row.
GRAD_LEGEND = """() => {
    const legend = document.querySelector('[data-chart=grad] .gw-chart-legend');
    const box = legend.getBoundingClientRect();
    const chips = [...legend.querySelectorAll('.gw-chart-chip')].map((chip) => {
        const r = chip.getBoundingClientRect();
        const text = chip.querySelector('.gw-chart-chip-label') ?? chip;
        return { text: chip.textContent, row: Math.round(r.top),
                 inside: r.top >= box.top - 0.5 && r.bottom <= box.bottom + 0.5
                     && r.left >= box.left - 0.5 && r.right <= box.right + 0.5,
                 cut: text.scrollWidth > text.clientWidth + 1 };
    });
    return { scrolls: legend.scrollHeight - legend.clientHeight, chips };
}"""

READOUT = """() => { const r = document.querySelector('[data-chart=grad] .gw-chart-readout-values');
    return [r.textContent, r.scrollWidth <= r.clientWidth + 1]; }"""


@pytest.mark.parametrize("size", [(1280, 720), (1920, 1080)])
def test_the_vanishing_gradients_legend_shows_all_twenty_parameters(page: Any, size: tuple[int, int]) -> None:
    # 20 chips in a legend three chips high that scrolled: fc6 to fc10 were out of sight
    page.set_viewport_size({"width": size[0], "height": size[1]})
    open_app(page, "?lesson=vanishing-gradients")
    page.wait_for_function(
        "() => window.gradwalk.model.isFinished && window.gradwalk.store.state.view === 'charts'"
    )
    expect(page.locator("[data-chart=grad] .gw-chart-chip")).to_have_count(20)
    legend = page.evaluate(GRAD_LEGEND)
    assert legend["scrolls"] <= 1, legend
    assert all(c["inside"] and not c["cut"] for c in legend["chips"]), legend
    # four columns, a layer's weight beside its bias: five rows
    rows: dict[int, list[str]] = {}
    for c in legend["chips"]:
        rows.setdefault(c["row"], []).append(c["text"])
    assert list(rows.values()) == [
        [f"fc{i}.weight", f"fc{i}.bias", f"fc{i + 1}.weight", f"fc{i + 1}.bias"] for i in (1, 3, 5, 7, 9)
    ], rows
    # the card is on screen whole, and hovering reads a line's name and value uncut
    card = page.locator("[data-chart=grad]").bounding_box()
    assert card["y"] + card["height"] <= size[1], card
    plot = page.locator("[data-chart=grad] .u-over").bounding_box()
    page.mouse.move(plot["x"] + plot["width"] * 0.5, plot["y"] + plot["height"] * 0.85)
    expect(page.locator("[data-chart=grad] .gw-chart-readout-values")).to_contain_text("step 15 · fc")
    text, whole = page.evaluate(READOUT)
    assert re.fullmatch(r"step 15 · fc\d+\.(weight|bias) [\d.e+−-]+", text) and whole, text
    shot(page, f"review52-04-vanishing-gradients-legend-{size[0]}")


# The `.grad` edge from x's AccumulateGrad to x: its step class and label.
GRAD_EDGE = """() => { const e = window.gradwalk.graph.core.edges('[kind = "acc"]');
    return [e.length, ['flowing', 'flowed', 'idle'].filter((c) => e.hasClass(c)).join(' '), e.data('label'),
            e.style('line-color')]; }"""


def test_the_grad_edge_lights_up_as_accumulate_grad_writes_into_it(page: Any) -> None:
    # the screenshot review: at the step where AccumulateGrad writes x.grad: None → 14.75 the
    # one edge carrying it into x stayed grey, as if nothing had flowed there
    open_stepper(page, (EXAMPLES / "cubic.py").read_text())
    steps = page.evaluate("() => window.gradwalk.model.timeline.length")
    classes = []
    for step in range(steps):
        page.evaluate("(s) => window.gradwalk.store.set({ step: s })", step)
        expect(page.locator(POSITION)).to_contain_text(f"step {step + 1} of {steps}")
        count, cls, label, color = page.evaluate(GRAD_EDGE)
        assert count == 1 and label == ".grad", (count, label)
        classes.append(cls)
        if step == 3:
            expect(page.locator(".gw-step-card .gw-acc")).to_have_text("x.grad: None → 14.75")
            settle(page)  # the colour transitions
            color = page.evaluate(GRAD_EDGE)[3]
            running = page.evaluate(
                "() => window.gradwalk.graph.core.nodes('.current').style('border-color')"
            )
            assert color == running, (color, running)  # the running node's colour
            shot(page, "review52-05-grad-edge-flowing")
    # SubBackward0, MulBackward0, PowBackward0, AccumulateGrad, the end
    assert classes == ["", "", "", "flowing", "flowed"], classes
