"""Review 53: four layout bugs of presenter type and embeds, in real Chromium against a real server.

data-edit's lesson text in presenter type at 1280 × 720 made its card 349 px tall (the code
showed four lines, the step card its title); a loop's step position ("step 4 of 12 ·
backward 2: 1 of 3") wrapped onto two lines in a 900 px embed; presenter type, once turned
on in the app, carried into every embed the browser opened (localStorage); leaf-grad in
presenter type at 1280 × 720 showed the Backward tab's count at 9.6 px (0.6em of the tab's
16 px), and the short legend at 1024 × 768 was 10.8 px.
"""

from __future__ import annotations

from typing import Any

import pytest

from .conftest import ROOT, expect, open_app, settle, shot, stored_run, wait_graph, wait_viewer

pytestmark = pytest.mark.browser

EXAMPLES = ROOT / "server" / "examples"

# The lesson card's height, its words' box (shown and whole heights), the text's type size
# and the bottom of the step card's title (the stepper's first line of content)
LESSON_ROOM = """() => {
    const card = document.querySelector('[data-gw=lesson-card]').getBoundingClientRect();
    const words = document.querySelector('[data-gw=lesson-card] .gw-lesson-text').parentElement;
    const title = document.querySelector('.gw-step-card h3').getBoundingClientRect();
    return { card: Math.round(card.height), shown: words.clientHeight, whole: words.scrollHeight,
             font: parseFloat(getComputedStyle(words.querySelector('.gw-lesson-text')).fontSize),
             titleBottom: Math.round(title.bottom), slider: Math.round(document.querySelector('.gw-stepper .gw-slider').getBoundingClientRect().bottom) };
}"""

# Every visible piece of text (a text node's element, or a ::before/::after with content) in
# the page's viewport whose computed type is under 11 px, as "size what 'text'"
SMALL_TEXT = """() => {
    const out = new Set();
    const shown = (el) => {
        const r = el.getBoundingClientRect();
        return r.width > 0 && r.height > 0 && r.bottom > 0 && r.right > 0 && r.top < innerHeight && r.left < innerWidth
            && el.checkVisibility({ opacityProperty: true, visibilityProperty: true });
    };
    for (const el of document.querySelectorAll('body *')) {
        if (!shown(el)) continue;
        const own = [...el.childNodes].some((n) => n.nodeType === Node.TEXT_NODE && n.textContent.trim());
        const size = parseFloat(getComputedStyle(el).fontSize);
        if (own && size < 11) out.add(`${size}px ${el.tagName.toLowerCase()}.${el.className} '${el.textContent.trim().slice(0, 30)}'`);
        for (const pseudo of ['::before', '::after']) {
            const ps = getComputedStyle(el, pseudo);
            if (ps.display === 'none' || ['none', 'normal', '""'].includes(ps.content)) continue;
            if (parseFloat(ps.fontSize) < 11) out.add(`${ps.fontSize} ${el.tagName.toLowerCase()}.${el.className}${pseudo} ${ps.content}`);
        }
    }
    return [...out].sort();
}"""


def test_a_long_lesson_text_scrolls_in_its_card_in_presenter_type(page: Any) -> None:
    # data-edit on a 1280 × 720 projector: the card was 349 px of the 720 (its text nine
    # lines at 20 px), the workspace under it 306 px
    page.set_viewport_size({"width": 1280, "height": 720})
    open_app(page, "?lesson=data-edit", presenter=True)
    page.wait_for_function("() => window.gradwalk.model.isFinished")
    wait_graph(page)
    settle(page)
    room = page.evaluate(LESSON_ROOM)
    shot(page, "review53-01-data-edit-presenter-1280")
    assert room["card"] <= 720 * 0.38, room  # 262 px now
    assert room["font"] >= 19, room  # presenter type's text, not shrunk to fit
    assert room["whole"] > room["shown"], room  # the rest is a scroll away, in its box
    assert room["titleBottom"] < 720 and room["slider"] < 720, room  # the stepper keeps its controls and card
    # scrolled to its end, the box shows the lesson's last words, whole
    last = page.locator("[data-gw=lesson-card] .gw-lesson-try")
    page.evaluate(
        "() => { const w = document.querySelector('[data-gw=lesson-card] .gw-lesson-text').parentElement; w.scrollTop = w.scrollHeight; }"
    )
    expect(last).to_be_in_viewport(ratio=1)
    box = page.evaluate(
        """() => { const w = document.querySelector('[data-gw=lesson-card] .gw-lesson-text').parentElement.getBoundingClientRect();
                   const t = document.querySelector('[data-gw=lesson-card] .gw-lesson-try').getBoundingClientRect();
                   return [t.bottom - w.bottom, w.top - t.top]; }"""
    )
    assert box[0] <= 0.5, box
    # Hide text folds the card to its title line, as before
    page.click("[data-gw=lesson-toggle]")
    assert (
        page.evaluate("() => document.querySelector('[data-gw=lesson-card]').getBoundingClientRect().height")
        < 100
    )
    page.click("[data-gw=lesson-toggle]")
    # the box caps only long texts: the same text at normal type on a 1024 × 768 laptop is whole
    page.set_viewport_size({"width": 1024, "height": 768})
    presenter_off = "() => { document.querySelector('[data-gw=presenter]').click(); return document.documentElement.dataset.presenter; }"
    assert page.evaluate(presenter_off) == "off"
    words = page.evaluate(
        "() => { const w = document.querySelector('[data-gw=lesson-card] .gw-lesson-text').parentElement; return [w.scrollHeight, w.clientHeight]; }"
    )
    assert words[0] <= words[1], words


@pytest.mark.parametrize("example", ["accumulate_loop.py", "pitfall_data_edit.py"])
def test_a_900px_embed_keeps_the_step_position_on_one_line(page: Any, example: str) -> None:
    # a course page's 900 × 560 frame of a loop: "step 4 of 12 · backward 2: 1 of 3" took
    # two lines beside the slider (189 px for its 215)
    run = stored_run(page.server, (EXAMPLES / example).read_text())
    page.set_viewport_size({"width": 900, "height": 560})
    page.goto(f"{page.server.url}/embed/{run}?view=stepper&step=3")
    wait_viewer(page)
    position = page.locator(".gw-viewer .gw-stepper .gw-position")
    expect(position).to_contain_text("step 4 of")
    for step in range(4):
        if step:
            page.click(
                ".gw-viewer button[aria-label='Last step']"
                if step == 3
                else ".gw-viewer button[aria-label='Next step']"
            )
        lines = page.evaluate(
            """() => { const p = document.querySelector('.gw-viewer .gw-stepper .gw-position');
                       const line = parseFloat(getComputedStyle(p).lineHeight);
                       return [p.getBoundingClientRect().height / line, p.innerText]; }"""
        )
        assert lines[0] < 1.5, lines
        assert "#" in lines[1] or "backward" in lines[1], lines  # the call is still said
    # the full words are still the position's, for a screen reader, and its tooltip
    expect(position).to_contain_text("backward ")
    assert "backward " in (position.get_attribute("title") or "")
    shot(page, f"review53-02-embed-900-position-{example[:-3]}")


def test_an_embed_keeps_to_normal_type_after_the_app_turned_presenter_on(page: Any) -> None:
    # a teacher turned presenter type on in the app; every embed the browser opened later (a
    # course page's, on the same site) came up in presenter type
    run = stored_run(page.server, (EXAMPLES / "cubic.py").read_text())
    open_app(page, presenter=True)
    page.goto(f"{page.server.url}/embed/{run}?view=stepper")
    wait_viewer(page)
    expect(page.locator(":root")).to_have_attribute("data-presenter", "off")
    assert page.evaluate("() => parseFloat(getComputedStyle(document.documentElement).fontSize)") == 15
    # the embed's link may still ask for it (a projector)
    page.goto(f"{page.server.url}/embed/{run}?view=stepper&presenter=on")
    wait_viewer(page)
    expect(page.locator(":root")).to_have_attribute("data-presenter", "on")
    # and neither visit changed the app's own choice
    open_app(page)
    expect(page.locator(":root")).to_have_attribute("data-presenter", "on")


def test_an_embed_takes_the_readers_system_theme_not_the_apps_remembered_one(page: Any) -> None:
    # session 54: the README says an embed without `theme` follows the reader's system
    # setting, but one opened after the app was switched to dark came up dark on a light system
    run = stored_run(page.server, (EXAMPLES / "cubic.py").read_text())
    page.emulate_media(color_scheme="light")
    open_app(page)
    if page.locator("[data-gw=more]").is_visible():
        page.click("[data-gw=more]")  # the header's buttons are folded under "More"
    page.click("[data-gw=theme]")
    expect(page.locator(":root")).to_have_attribute("data-theme", "dark")
    page.goto(f"{page.server.url}/embed/{run}?view=stepper")
    wait_viewer(page)
    expect(page.locator(":root")).to_have_attribute("data-theme", "light")
    page.emulate_media(color_scheme="dark")  # a reader whose system is dark
    page.goto(f"{page.server.url}/embed/{run}?view=stepper")
    wait_viewer(page)
    expect(page.locator(":root")).to_have_attribute("data-theme", "dark")
    # the link's own theme wins over the system's
    page.goto(f"{page.server.url}/embed/{run}?view=stepper&theme=light")
    wait_viewer(page)
    expect(page.locator(":root")).to_have_attribute("data-theme", "light")
    # and the app keeps its own remembered choice
    page.emulate_media(color_scheme="light")
    open_app(page)
    expect(page.locator(":root")).to_have_attribute("data-theme", "dark")


@pytest.mark.parametrize(
    ("width", "height", "presenter"), [(1280, 720, True), (1024, 768, False), (390, 844, True)]
)
def test_no_text_in_a_lesson_is_under_11px(page: Any, width: int, height: int, presenter: bool) -> None:
    # leaf-grad: in presenter type the Backward tab's count "5" was 9.6 px at 1280 × 720 (and
    # on a phone); at normal type on a 1024 × 768 screen the short legend was 10.8 px
    page.set_viewport_size({"width": width, "height": height})
    open_app(page, "?lesson=leaf-grad", presenter=presenter)
    page.wait_for_function("() => window.gradwalk.model.isFinished")
    wait_graph(page)
    small = set(page.evaluate(SMALL_TEXT))
    for name in ("Tape", "Inspect", "Charts", "Backward"):
        page.locator(".gw-pane-side .gw-tabs [role=tab][data-view]", has_text=name).click()
        settle(page)
        small |= set(page.evaluate(SMALL_TEXT))
    assert not small, sorted(small)
