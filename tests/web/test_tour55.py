"""The README's quick tour, done as a user would (hunt 55): what it promises a learner, a
teacher and a course author, in a real Chromium on the real app."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from tests.server.harness import LiveServer
from tests.web.conftest import expect, open_app, run_example, shot, stored_run, wait_viewer

PLAY = "button.gw-play"

# Whether each of `chars` is drawn by some font in the font of `selector`: a code point no font
# has (U+E000, private use) is drawn as the font's empty box, so a character drawn the same,
# pixel for pixel, has no glyph on this machine either.
DRAWN = """([selector, chars]) => {
    const font = getComputedStyle(document.querySelector(selector)).font;
    const draw = (c) => {
        const canvas = document.createElement('canvas');
        canvas.width = 48; canvas.height = 48;
        const g = canvas.getContext('2d');
        g.font = font;
        g.fillText(c, 4, 32);
        return Array.from(g.getImageData(0, 0, 48, 48).data).join(',');
    };
    const box = draw('\\uE000');
    return Object.fromEntries([...chars].filter((c) => c.trim()).map((c) => [c, draw(c) !== box]));
}"""


def test_pause_is_drawn_with_a_glyph_every_font_setup_has(page: Any) -> None:
    """**P** plays the walk; its button then reads Pause. Its ⏸ (U+23F8) is in no font of a
    Chromium without an emoji font (Debian's, CI's): the button showed an empty box."""
    open_app(page)
    run_example(page, "cubic")
    page.keyboard.press("2")
    page.keyboard.press("p")
    expect(page.locator(PLAY)).to_have_attribute("aria-label", "Pause")
    label = page.locator(PLAY).inner_text()
    assert "Pause" in label
    drawn = page.evaluate(DRAWN, [PLAY, label])
    shot(page, "tour55-pause")
    assert all(drawn.values()), f"characters of {label!r} no font draws: {drawn}"


IN_EDITOR = (
    "() => document.activeElement?.shadowRoot?.activeElement?.getAttribute('aria-label') === 'PyTorch code'"
)


def test_tabbing_into_the_code_shows_where_the_focus_is_and_how_to_leave(page: Any) -> None:
    """The learner's tour by keyboard: Tab from the header lands in the code, where the next
    Tab indents. Nothing but a caret showed the focus had arrived (CodeMirror's outline is
    off). Now a ring and a line of keys (Tab indents, Esc then Tab to leave) show while the
    focus came by Tab, and go when it leaves; a click in the code shows neither."""
    open_app(page)
    keys = page.locator(".gw-editor .cm-gw-keys")
    page.locator("[data-gw=examples]").focus()
    for _ in range(20):
        page.keyboard.press("Tab")
        if page.evaluate(IN_EDITOR):
            break
    assert page.evaluate(IN_EDITOR)
    expect(keys).to_be_visible()
    expect(keys).to_contain_text("Esc, then Tab")
    ring = page.evaluate(
        "() => getComputedStyle(document.querySelector('.gw-editor').shadowRoot.querySelector('.cm-editor'), '::after').borderTopStyle"
    )
    assert ring == "solid"
    shot(page, "tour55-editor-keyboard-focus")
    page.keyboard.press("Escape")
    page.keyboard.press("Tab")
    expect(page.locator("[data-gw=output]")).to_be_focused()
    expect(keys).to_have_count(0)
    page.locator(".gw-editor .cm-content").click()
    assert page.evaluate(IN_EDITOR)
    expect(keys).to_have_count(0)


SLOW = "import time\nimport torch\n\nx = torch.ones(2, requires_grad=True)\ntime.sleep(60)\n"


def focused(page: Any) -> str:
    return str(
        page.evaluate(
            "() => document.activeElement ? (document.activeElement.dataset.gw || document.activeElement.tagName) : ''"
        )
    )


def test_run_from_the_keyboard_keeps_the_focus_on_the_run_controls(page: Any) -> None:
    """Enter on ▶ Run turns it off while the run goes: the focus went to the page's body,
    where nothing showed it. It now moves to Stop, and back to ▶ Run when the run ends."""
    open_app(page)
    page.evaluate("(src) => { window.gradwalk.editor.source = src; }", SLOW)
    page.focus("[data-gw=lessons]")
    page.keyboard.press("Tab")
    assert focused(page) == "run"
    page.keyboard.press("Enter")
    page.wait_for_selector("[data-gw=status][data-state=running]", timeout=60_000)
    assert focused(page) == "stop"
    shot(page, "tour55-run-focus-stop")
    page.keyboard.press("Enter")
    page.wait_for_selector("[data-gw=status][data-state=cancelled]", timeout=60_000)
    assert focused(page) == "run"
    # and a run that finishes by itself hands the focus back too
    run_button = page.locator("[data-gw=run]")
    page.select_option("[data-gw=examples]", "cubic")
    run_button.focus()
    page.keyboard.press("Enter")
    page.wait_for_selector("[data-gw=status][data-state=ok]", timeout=60_000)
    expect(run_button).to_be_focused()


CUBIC = (
    "import torch\n\nx = torch.tensor(2.5, requires_grad=True)\ny = x**3 - 4*x\ny.backward()\nprint(x.grad)\n"
)


def test_an_embeds_line_link_shows_the_line_in_the_code(page: Any) -> None:
    """An embed 900 px wide (a course page's column): the step card's "line 4" (its title:
    "Show the line in the code") lit the line in the Code tab, which was not open, so the
    click seemed to do nothing. It now opens the Code tab, the step's line marked there."""
    run = stored_run(page.server, CUBIC)
    page.set_viewport_size({"width": 900, "height": 560})
    page.goto(f"{page.server.url}/embed/{run}?view=stepper&step=1")
    wait_viewer(page)
    card = page.locator(".gw-step-card")
    expect(card.locator(".gw-node-name")).to_have_text("MulBackward0")
    card.get_by_role("button", name="line 4").click()
    expect(page.get_by_role("tab", name="Code")).to_have_attribute("aria-selected", "true")
    line = page.locator(".gw-viewer-code .gw-code-line.current")
    expect(line).to_be_visible()
    expect(line).to_contain_text("y = x**3 - 4*x")
    shot(page, "tour55-embed-line-link")


def test_copy_embed_code_names_the_run_as_the_embed_does(page: Any) -> None:
    """**Copy embed code** after *Your first backward()*: the embed's header reads that title,
    but the `<iframe title>` a screen reader announces on the course page read
    "gradwalk: snippet.py" (the trace's file name)."""
    page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=page.server.url)
    open_app(page)
    run_example(page, "cubic")
    page.click("[data-gw=copy-embed]")
    expect(page.locator("[data-gw=copy-embed]")).to_have_attribute("data-done", "copied")
    code = page.evaluate("() => navigator.clipboard.readText()")
    assert 'title="gradwalk: Your first backward()"' in code, code


TOKEN = "tour55-classroom-token"


@pytest.fixture(scope="module")
def token_server(bundle: Path, tmp_path_factory: pytest.TempPathFactory) -> Any:
    """A real ``gradwalk serve --token``: creating a run needs the token. One worker: its
    tests run one snippet at a time (each worker started imports PyTorch, seconds on CI)."""
    srv = LiveServer.start(tmp_path_factory.mktemp("token-server"), token=TOKEN, workers=1)
    try:
        yield srv
    finally:
        srv.stop()


def test_a_server_with_a_token_asks_for_it_once_and_then_runs(
    page: Any, token_server: LiveServer, request: pytest.FixtureRequest
) -> None:
    """The tour: serve with a token and "the page asks you for it once". It asked, but the token
    given ran nothing: ▶ Run had to be pressed again, under "This server needs a token to run
    code: this server needs a token: send 'Authorization: Bearer TOKEN'". Now the token given
    runs the code, and a token refused is said so, in a learner's words."""
    request.node.allow_console_errors = True  # Chromium logs the refused requests (401, 403)
    asked: list[str] = []
    answers = ["not-the-token", TOKEN]

    def answer(dialog: Any) -> None:
        asked.append(dialog.message)
        dialog.accept(answers.pop(0))

    page.on("dialog", answer)
    page.goto(f"{token_server.url}/")
    page.wait_for_selector("[data-gw=examples] option[value=cubic]", state="attached")
    page.select_option("[data-gw=examples]", "cubic")
    page.click("[data-gw=run]")
    expect(page.locator("[data-gw=status]")).to_have_attribute("data-state", "ok")
    expect(page.locator("[data-gw=output]")).to_contain_text("tensor(14.7500)")
    assert len(asked) == 2 and "not accepted" in asked[1], asked
    shot(page, "tour55-token-run")
    # refused with no token given: the output says what to do, not which header to send
    page.remove_listener("dialog", answer)
    page.on("dialog", lambda dialog: dialog.dismiss())
    page.evaluate("() => sessionStorage.clear()")
    page.reload()
    page.wait_for_selector("[data-gw=examples] option[value=cubic]", state="attached")
    page.click("[data-gw=run]")
    output = page.locator("[data-gw=output]")
    expect(output).to_contain_text("access token")
    assert "Authorization" not in output.inner_text()


def test_a_room_on_a_server_with_a_token_opens_once_the_token_is_given(
    page: Any, token_server: LiveServer, request: pytest.FixtureRequest
) -> None:
    """The classroom's *Start a room* on a server with a token asked for it, then did nothing:
    the teacher had to press it again, under "Opening a room on this server needs its access
    token: this server needs a token: send 'Authorization: Bearer TOKEN'". Now the token given
    opens the room (found by the tour's review, as a run's was)."""
    request.node.allow_console_errors = True  # Chromium logs the refused request (401)
    asked: list[str] = []

    def answer(dialog: Any) -> None:
        asked.append(dialog.message)
        dialog.accept(TOKEN)

    page.on("dialog", answer)
    page.goto(f"{token_server.url}/")
    page.evaluate("() => sessionStorage.clear()")
    page.wait_for_selector("[data-gw=classroom]")
    page.click("[data-gw=classroom]")
    page.click("[data-gw=room-start]")
    page.wait_for_url(re.compile(r"/room/[A-Z0-9]{6}$"))
    page.wait_for_selector("[data-gw=room-bar][data-conn=live]")
    assert len(asked) == 1, asked
