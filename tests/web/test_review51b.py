"""The review's second part: three things seen in screenshots of the app.

A learner stepping small_net read `net.fc1.bias.grad: 0 + [16] ‖·‖ 0.01634 → [16] ‖·‖ 0.01634`
for a .grad that was None (the shape twice, a 0 that never was); a teacher on a 1024 x 768
projector in presenter type saw the examples list cut its title ("Gradients for two leav"),
and "Examples…" for a lesson whose code is its own snippet; a parameter's `.grad [−0.00148,
−0.0042]` ran over its hexagon's slanted sides.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
import torch

from .conftest import (
    ROOT,
    expect,
    open_app,
    run_example,
    settle,
    shot,
    stored_run,
    wait_graph,
)

pytestmark = pytest.mark.browser

EXAMPLES = ROOT / "server" / "examples"
POSITION = ".gw-stepper .gw-position"

TWO_ACCUMULATIONS = """import torch
torch.manual_seed(0)
w = torch.randn(16, requires_grad=True)
(w * 2).sum().backward()
(w * w).sum().backward()
"""


def _accumulation_lines(page: Any) -> list[str]:
    """Every step card's accumulation lines, stepping the whole walk, in order, once each."""
    steps = page.evaluate("() => window.gradwalk.model.timeline.length")
    seen: list[str] = []
    for step in range(steps):
        page.evaluate("(s) => window.gradwalk.store.set({ step: s })", step)
        expect(page.locator(POSITION)).to_contain_text(f"of {steps}")
        for text in page.locator(".gw-step-card .gw-acc").all_inner_texts():
            if text not in seen:
                seen.append(text)
    return seen


def test_a_big_grads_accumulation_reads_its_shape_once_and_none_when_it_was(page: Any) -> None:
    # The first accumulation set a None .grad: "None →", the shape once, the norm
    run = stored_run(page.server, (EXAMPLES / "small_net.py").read_text())
    page.goto(f"{page.server.url}/?run={run}&view=stepper&step=0")
    expect(page.locator(".gw-step-card h3")).to_be_visible()
    lines = _accumulation_lines(page)
    assert "net.fc1.bias.grad [16]: None → ‖·‖ 0.01634" in lines, lines
    assert "net.fc2.weight.grad [2×16]: None → ‖·‖ 0.1409" in lines, lines
    # a vector printed whole reads None too: nothing was added to a 0 (review 52)
    assert "net.fc2.bias.grad: None → [−0.00148, −0.004197]" in lines, lines
    assert not [line for line in lines if line.count("[16]") > 1 or " 0 + " in line], lines

    # a second backward() adds to a .grad that holds a gradient: the three norms, each its own
    run = stored_run(page.server, TWO_ACCUMULATIONS)
    page.goto(f"{page.server.url}/?run={run}&view=stepper&step=0")
    expect(page.locator(".gw-step-card h3")).to_be_visible()
    lines = _accumulation_lines(page)
    assert lines[0] == "w.grad [16]: None → ‖·‖ 8", lines
    said = re.fullmatch(r"w\.grad \[16\]: ‖·‖ 8 \+ ‖·‖ ([\d.]+) → ‖·‖ ([\d.]+)", lines[1])
    assert said, lines
    torch.manual_seed(0)
    w = torch.randn(16)
    added, after = (2 * w).norm().item(), (2 + 2 * w).norm().item()
    assert float(said[1]) == pytest.approx(added, rel=1e-3) and float(said[2]) == pytest.approx(
        after, rel=1e-3
    )
    assert len(lines) == 2, lines


# The examples list's shown option: its text, and the px it needs (text and the list's
# padding and arrow) against the px the list has.
EXAMPLES_LIST = """() => {
    const select = document.querySelector('[data-gw=examples]');
    const style = getComputedStyle(select);
    const ctx = document.createElement('canvas').getContext('2d');
    ctx.font = `${style.fontWeight} ${style.fontSize} ${style.fontFamily}`;
    const text = select.selectedOptions[0].textContent;
    const need = ctx.measureText(text).width + parseFloat(style.paddingLeft) + parseFloat(style.paddingRight) + 20;
    const header = document.querySelector('.gw-header').getBoundingClientRect();
    const r = select.getBoundingClientRect();
    return { text, need: Math.round(need), room: Math.round(select.clientWidth), title: select.title,
             rows: header.height, inHeader: r.top >= header.top && r.bottom <= header.bottom };
}"""


@pytest.mark.parametrize("size", [(1024, 768), (1280, 720)])
def test_the_examples_list_names_a_lesson_whole_in_presenter_type(page: Any, size: tuple[int, int]) -> None:
    # Presenter type on a projector: "Gradients for two leav" was cut at 230 px with no
    # "…"; the list now takes the header's room left over, and hovering it reads the title
    page.set_viewport_size({"width": size[0], "height": size[1]})
    open_app(page, presenter=True)
    page.goto(f"{page.server.url}/?lesson=chain-rule")
    expect(page.locator(".gw-lesson-title")).to_have_text("The chain rule through two paths")
    wait_graph(page)
    shown = page.evaluate(EXAMPLES_LIST)
    assert shown["text"] == "Gradients for two leaves", shown
    assert shown["need"] <= shown["room"], shown
    assert shown["title"].startswith("Gradients for two leaves: "), shown
    # a lesson whose code is its own snippet: its title, not "Examples…"
    page.goto(f"{page.server.url}/?lesson=mlp-classifier")
    expect(page.locator(".gw-lesson-title")).to_have_text("An MLP classifier")
    wait_graph(page)
    shown = page.evaluate(EXAMPLES_LIST)
    assert shown["text"] == "Lesson: An MLP classifier", shown
    assert shown["need"] <= shown["room"], shown
    assert shown["title"] == "The code of the lesson “An MLP classifier”", shown
    # the header keeps to one row, Classroom under "More" at 1024 px as before
    assert shown["rows"] < 60 and shown["inHeader"], shown
    expect(page.locator(".gw-header > [data-gw=classroom]")).to_have_count(0 if size[0] == 1024 else 1)
    # the user's edits to it say so
    page.evaluate("() => { window.gradwalk.editor.view.focus(); }")
    page.keyboard.press("Control+End")
    page.keyboard.type("\n# mine")
    expect(page.locator("[data-gw=examples] option:checked")).to_have_text("Edited: An MLP classifier")
    settle(page)
    shot(page, f"review51b-02-examples-list-presenter-{size[0]}")


# Each line of every parameter's label wider than its hexagon at that line's row, as [line,
# needed px, room px]: Cytoscape's hexagon has its corners at the middle row's ends and
# narrows to half its width at its top and bottom edges (a line's ink taken as the font size
# high, the room less the border: half of it on either side).
LABEL_OUTSIDE_HEXAGON = """() => {
    const cy = window.gradwalk.graph.core;
    const ctx = document.createElement('canvas').getContext('2d');
    const out = [];
    cy.nodes('[kind = "param"]').filter((n) => n.visible()).forEach((n) => {
        const fs = n.numericStyle('font-size');
        const lh = fs * n.numericStyle('line-height');
        ctx.font = `${n.style('font-style')} ${n.style('font-weight')} ${fs}px ${n.style('font-family')}`;
        const lines = String(n.data('label')).split('\\n');
        const w = n.width(), h = n.height();
        lines.forEach((line, i) => {
            const d = Math.abs(i - (lines.length - 1) / 2) * lh + fs / 2;
            const room = w * (1 - d / h) - n.numericStyle('border-width');
            const need = ctx.measureText(line).width;
            if (need > room) out.push([line, Math.round(need), Math.round(room)]);
        });
    });
    return out;
}"""


def test_a_parameters_grad_fits_inside_its_hexagon_at_every_step(page: Any) -> None:
    # small_net's fc2.bias read `.grad [−0.00148, −0.0042]`, 181 px where its hexagon's
    # bottom row leaves 146: it reads its norm now (the numbers are on its edge and in the
    # card), and the hexagons are sized for their bottom row, as small_net still fits its pane
    page.set_viewport_size({"width": 1366, "height": 768})
    open_app(page)
    run_example(page, "small_net")
    page.get_by_role("tab", name="Backward").click()
    steps = page.evaluate("() => window.gradwalk.model.timeline.length")
    outside = {}
    for step in range(steps):
        page.evaluate("(s) => window.gradwalk.store.set({ step: s })", step)
        expect(page.locator(POSITION)).to_contain_text(f"step {step + 1} of {steps}")
        for line, need, room in page.evaluate(LABEL_OUTSIDE_HEXAGON):
            outside[line] = (step + 1, need, room)
    assert not outside, outside
    labels = page.evaluate(
        "() => window.gradwalk.graph.core.nodes('[kind = \"param\"]').map((n) => n.data('label'))"
    )
    assert "net.fc2.bias\n[2]\n.grad ‖·‖ 0.00445" in labels, labels
    settle(page)
    shot(page, "review51b-03-small-net-hexagons")
