"""A course author's walk through embeds, downloads and exports: the view and step asked for,
bad query values, and what a reader sees in the frame."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from .conftest import (
    NEXT,
    ROOT,
    expect,
    open_app,
    run_example,
    run_source,
    settle,
    shot,
    stored_run,
    wait_viewer,
)

pytestmark = pytest.mark.browser

EXAMPLES = ROOT / "server" / "examples"


@pytest.fixture(scope="module")
def training_run(server: Any) -> str:
    return stored_run(server, (EXAMPLES / "clean_training.py").read_text())


def test_copy_embed_code_from_the_charts_after_stepping_opens_the_charts(page: Any) -> None:
    # An author steps the backward walk, then opens the Charts to embed the loss curve:
    # the embed code carries view=charts&step=3, and the embed opened the Backward stepper,
    # as a step always switched the viewer to it.
    page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=page.server.url)
    open_app(page)
    run_example(page, "clean_training")
    page.click("#gw-tab-stepper")
    for _ in range(3):
        page.click(NEXT)
    page.click("#gw-tab-charts")
    page.click("[data-gw=copy-embed]")
    expect(page.locator("[data-gw=copy-embed]")).to_have_attribute("data-done", "copied")
    code = page.evaluate("() => navigator.clipboard.readText()")
    assert "view=charts&amp;step=3" in code, code
    src = code.split('src="', 1)[1].split('"', 1)[0].replace("&amp;", "&")
    page.set_viewport_size({"width": 720, "height": 560})
    page.goto(src)
    wait_viewer(page)
    assert page.evaluate("() => window.gradwalkViewer.view") == "charts"
    expect(page.locator(".gw-viewer [data-panel=charts]")).to_be_visible()
    expect(page.locator(".gw-viewer .gw-viewer-tabs [data-view=charts]")).to_have_attribute(
        "aria-selected", "true"
    )
    # the step is kept for the Backward tab
    page.click(".gw-viewer .gw-viewer-tabs [data-view=stepper]")
    expect(page.locator(".gw-viewer .gw-stepper .gw-position")).to_contain_text("step 4 of 39")
    settle(page)
    shot(page, "embeds4-01-charts-after-stepping")


@pytest.mark.parametrize("view", ["tape", "inspector", "charts"])
def test_an_embed_opens_the_view_asked_for_at_a_step(page: Any, training_run: str, view: str) -> None:
    page.goto(f"{page.server.url}/embed/{training_run}?view={view}&step=5")
    wait_viewer(page)
    assert page.evaluate("() => window.gradwalkViewer.view") == view
    expect(page.locator(f".gw-viewer [data-panel={view}]")).to_be_visible()
    assert page.evaluate("() => window.gradwalkViewer.store.state.step") == 5


def test_an_export_opens_the_tape_at_a_step_from_disk(page: Any, tmp_path: Path) -> None:
    from engine.run import record
    from server.export import render_export

    trace = record((EXAMPLES / "cubic.py").read_text(), filename="cubic.py").model_dump_json()
    out = tmp_path / "tape.html"
    out.write_text(render_export(trace, view="tape", step=2), encoding="utf-8")
    page.goto(out.resolve().as_uri())
    wait_viewer(page)
    assert page.evaluate("() => window.gradwalkViewer.view") == "tape"
    expect(page.locator(".gw-viewer [data-panel=tape]")).to_be_visible()
    page.click(".gw-viewer .gw-viewer-tabs [data-view=stepper]")
    expect(page.locator(".gw-viewer .gw-stepper .gw-position")).to_have_text("step 3 of 5")


def test_the_exports_step_count_is_the_viewers(page: Any, training_run: str) -> None:
    # gradwalk export --step and a notebook's step= are refused past the end counted in
    # Python: the count must be the stepper's own (39 for the training loop's 3 detailed steps)
    import httpx

    from server.export import backward_steps

    events = httpx.get(f"{page.server.url}/api/runs/{training_run}/trace").raise_for_status().json()["events"]
    page.goto(f"{page.server.url}/embed/{training_run}?view=stepper")
    wait_viewer(page)
    assert backward_steps(events) == page.evaluate("() => window.gradwalkViewer.model.timeline.length") == 39


CURRENT_LINE_IN_VIEW = """() => {
    const line = document.querySelector('.gw-viewer .gw-code-line.current');
    const scroller = document.querySelector('.gw-viewer .gw-code-scroll');
    if (!line || !scroller) return null;
    const l = line.getBoundingClientRect(), s = scroller.getBoundingClientRect();
    return l.top >= s.top - 1 && l.bottom <= s.bottom + 1;
}"""


@pytest.mark.parametrize("controls", ["show", "hide"])
def test_a_code_embed_at_a_step_shows_the_steps_line(page: Any, server: Any, controls: str) -> None:
    # 720 x 420, the code at step 4 of small_net: line 14 (the model's forward) was lit but
    # out of sight below lines 1 to 4, the listing scrolled for a taller pane than it got
    run_id = stored_run(server, (EXAMPLES / "small_net.py").read_text())
    page.set_viewport_size({"width": 720, "height": 420})
    page.goto(f"{server.url}/embed/{run_id}?view=code&step=3&controls={controls}")
    wait_viewer(page)
    expect(page.locator(".gw-viewer .gw-code-line.current")).to_contain_text("return self.fc2")
    page.wait_for_function(CURRENT_LINE_IN_VIEW)
    settle(page)
    shot(page, f"embeds4-02-code-at-a-step-{controls}")


TABS_HIDDEN = """() => {
    const bar = document.querySelector('.gw-viewer .gw-viewer-bar');
    const theme = bar.querySelector('[data-gw=theme]');
    const t = theme ? theme.getBoundingClientRect() : null;
    const row = bar.querySelector('.gw-viewer-tabs').getBoundingClientRect();
    return [...bar.querySelectorAll('.gw-viewer-tabs [role=tab]')].filter((tab) => {
        const r = tab.getBoundingClientRect();
        const under = t && r.left < t.right && r.right > t.left && r.top < t.bottom && r.bottom > t.top;
        return under || r.left < row.left - 1 || r.right > row.right + 1;
    }).map((tab) => tab.dataset.view);
}"""


@pytest.mark.parametrize(("width", "height"), [(560, 360), (600, 420), (400, 300)])
def test_a_small_course_frame_shows_every_tab_and_gives_the_charts_its_height(
    page: Any, training_run: str, width: int, height: int
) -> None:
    # at 521-620 px the six tabs shared the brand's row: the Charts tab sat under the theme
    # button, the row scrolled sideways with no scrollbar; in a frame 360 px high or less the
    # charts got the 42% row meant for the graph (135 of the 321 px under the bar), the rest blank
    page.set_viewport_size({"width": width, "height": height})
    page.goto(f"{page.server.url}/embed/{training_run}?view=charts")
    wait_viewer(page)
    assert page.evaluate(TABS_HIDDEN) == []
    charts = page.locator(".gw-viewer [data-panel=charts]")
    expect(charts).to_be_visible()
    room = page.evaluate(
        """() => {
            const body = document.querySelector('.gw-viewer .gw-viewer-body').getBoundingClientRect();
            const pane = document.querySelector('.gw-viewer [data-panel=charts]').getBoundingClientRect();
            return [pane.height, body.height];
        }"""
    )
    assert room[0] >= 0.9 * room[1], room
    settle(page)
    shot(page, f"embeds4-small-frame-{width}x{height}")


def test_the_embed_code_names_the_run_by_its_title(page: Any) -> None:
    # the iframe's title (what a screen reader announces for the frame) said "run 1ffca3af93e2"
    # for a run whose first comment names it, as the viewer's heading does
    page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=page.server.url)
    open_app(page)
    run_source(
        page,
        "# The product rule, step by step\nimport torch\nx = torch.tensor(1.5, requires_grad=True)\n(x * torch.exp(x)).backward()\n",
    )
    page.click("[data-gw=copy-embed]")
    expect(page.locator("[data-gw=copy-embed]")).to_have_attribute("data-done", "copied")
    code = page.evaluate("() => navigator.clipboard.readText()")
    assert 'title="gradwalk: The product rule, step by step"' in code, code


@pytest.mark.parametrize(("width", "height"), [(720, 560), (720, 420), (560, 360)])
def test_the_stepper_position_reads_on_one_line_in_a_course_frame(
    page: Any, server: Any, width: int, height: int
) -> None:
    # at 720 px "step 7 of 12" wrapped onto two lines beside a 117 px slider: the flex row
    # shrank the text by a fraction of a pixel rather than the slider
    run_id = stored_run(server, (EXAMPLES / "small_net.py").read_text())
    page.set_viewport_size({"width": width, "height": height})
    page.goto(f"{server.url}/embed/{run_id}?view=stepper&step=6")
    wait_viewer(page)
    position = page.locator(".gw-viewer .gw-stepper .gw-position")
    expect(position).to_have_text("step 7 of 12")
    one_line = page.evaluate(
        """() => {
            const position = document.querySelector('.gw-viewer .gw-stepper .gw-position');
            const probe = position.cloneNode(true);
            probe.style.cssText = 'position:absolute;visibility:hidden;white-space:nowrap;max-width:none';
            position.parentElement.appendChild(probe);
            const single = probe.getBoundingClientRect().height;
            probe.remove();
            const r = position.getBoundingClientRect();
            const row = position.parentElement.getBoundingClientRect();
            const speed = position.parentElement.querySelector('select').getBoundingClientRect();
            return [r.height, single, speed.right <= row.right + 1];
        }"""
    )
    height_now, single, speed_inside = one_line
    assert height_now <= single + 1, one_line
    assert speed_inside, one_line


_SCRUBBER = """() => {
    const box = (s) => document.querySelector(s).getBoundingClientRect();
    const position = box('.gw-viewer .gw-stepper .gw-position');
    const line = parseFloat(getComputedStyle(document.querySelector('.gw-viewer .gw-stepper .gw-position')).lineHeight);
    const beside = box('.gw-viewer .gw-stepper .gw-scrubber').top < box('.gw-viewer .gw-stepper .gw-step-controls').bottom;
    return {slider: Math.round(box('.gw-viewer .gw-stepper .gw-slider').width), lines: Math.round(position.height / line), beside};
}"""


def test_the_step_slider_is_worth_dragging_in_a_frame_of_any_width(page: Any, server: Any) -> None:
    # In a 1400 px (and a 640 px) frame the scrubber was squeezed beside the step buttons:
    # a 49 px slider, and "step 4 of 7" wrapped onto two lines. It now takes a row of its own.
    run_id = stored_run(server, (EXAMPLES / "small_net.py").read_text())
    page.set_viewport_size({"width": 1400, "height": 560})
    page.goto(f"{server.url}/embed/{run_id}?view=stepper&step=3")
    wait_viewer(page)
    expect(page.locator(".gw-viewer .gw-stepper .gw-position")).to_have_text("step 4 of 12")
    cramped = []
    for width in range(600, 1721, 10):
        page.set_viewport_size({"width": width, "height": 560})
        got = page.evaluate(_SCRUBBER)
        if got["slider"] < 90 or got["lines"] != 1:
            cramped.append((width, got))
        if width == 720:  # a course page's column: the step buttons and the slider share one row
            assert got["beside"], got
    assert not cramped, cramped


def test_copy_embed_code_from_the_inspector_keeps_the_tensor_inspected(page: Any, tmp_path: Path) -> None:
    # An author clicks w in the graph and copies the embed code from the Inspect tab: the
    # embed showed the graph, with nothing inspected (view=graph, no sel), and so did the
    # downloaded page. Both now open the inspector on w.
    page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=page.server.url)
    open_app(page)
    run_source(
        page,
        "import torch\nx = torch.tensor([1.0, 2.0], requires_grad=True)\n"
        "w = torch.tensor([3.0, -1.0], requires_grad=True)\n(x * w).sum().backward()\n",
    )
    leaf = page.evaluate(
        "() => window.gradwalk.graph.core.nodes('[kind = \"leaf\"]').filter((n) => n.data('label').startsWith('w')).id()"
    )
    page.evaluate(f"() => {{ window.gradwalk.graph.core.$('#{leaf}').emit('tap'); }}")
    expect(page.locator("#gw-tab-inspector")).to_have_attribute("aria-selected", "true")
    tensor = page.evaluate("() => window.gradwalk.store.state.selection")
    assert tensor["kind"] == "tensor", tensor
    page.click("[data-gw=copy-embed]")
    expect(page.locator("[data-gw=copy-embed]")).to_have_attribute("data-done", "copied")
    code = page.evaluate("() => navigator.clipboard.readText()")
    assert f"view=inspector&amp;sel=t{tensor['id']}" in code, code
    if not page.locator("[data-gw=download-html]").is_visible():
        page.click("[data-gw=more]")
    with page.expect_download() as info:
        page.click("[data-gw=download-html]")
    saved = tmp_path / "inspected.html"
    info.value.save_as(saved)

    src = code.split('src="', 1)[1].split('"', 1)[0].replace("&amp;", "&")
    page.goto(src)
    wait_viewer(page)
    assert page.evaluate("() => window.gradwalkViewer.view") == "inspector"
    body = page.locator(".gw-viewer .gw-inspector-body")
    expect(body).to_contain_text("leaf (requires grad)")
    expect(body.locator(".gw-inspect-title")).to_have_text("leaf (requires grad) w")
    expect(body).to_contain_text("[1, 2]")  # w.grad = x
    # "Open in gradwalk" goes to the app at the same tensor
    assert f"sel=t{tensor['id']}" in page.locator(".gw-viewer-open").get_attribute("href")

    page.goto(saved.as_uri())
    wait_viewer(page)
    assert page.evaluate("() => window.gradwalkViewer.view") == "inspector"
    expect(page.locator(".gw-viewer .gw-inspector-body")).to_contain_text("[1, 2]")


def test_the_copy_tick_leaves_the_header_as_it_was(page: Any) -> None:
    # Copy embed code's tick made the button wider for 1.5 s: at 1440 px that re-measured the
    # header as crowded and folded its tools behind "More" while the author looked at them
    # (and a click on Download HTML meant for the row found it hidden). The tick is a badge now.
    page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=page.server.url)
    open_app(page)
    run_example(page, "cubic")
    button = page.locator("[data-gw=copy-embed]")
    expect(button).to_be_visible()  # 1440 px: the tools sit in the header's row
    before = button.bounding_box()
    assert before is not None
    crowded = page.evaluate("() => document.querySelector('.gw-header').dataset.crowded !== undefined")
    button.click()
    expect(button).to_have_attribute("data-done", "copied")
    page.wait_for_timeout(300)  # a ResizeObserver's measure runs after the next frame
    after = button.bounding_box()
    assert after is not None and after["width"] == before["width"], (before, after)
    assert (
        page.evaluate("() => document.querySelector('.gw-header').dataset.crowded !== undefined") == crowded
    )
    expect(page.locator("[data-gw=download-html]")).to_be_visible()
    shot(page, "copy-tick")
