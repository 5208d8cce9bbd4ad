"""Printed output read as a terminal shows it: a carriage return goes back to the start of its
line, so a training loop's progress line (`print(f"\\rstep {i}", end="")`, a progress bar's
redraw) reads as one line that ends at the last step; it ran on as "step 0step 1step 2…",
wrapped over many lines (hunt 65, pasted source)."""

from __future__ import annotations

from typing import Any

import pytest

from .conftest import expect, open_app, run_source

pytestmark = pytest.mark.browser

PROGRESS = """import torch
w = torch.tensor(1.0, requires_grad=True)
for i in range(30):
    loss = (w * 3 - 2) ** 2
    loss.backward()
    print(f"\\rstep {i:3d} loss {loss.item():.4f}", end="", flush=True)
print()
print("done\\r")
print("a\\r\\nb")
"""


def test_a_progress_line_redrawn_with_carriage_returns_reads_as_its_last_state(page: Any) -> None:
    open_app(page)
    run_source(page, PROGRESS)
    printed = page.locator(".gw-stdout")
    # the last redraw, then lines as printed; a `\\r` at a line's end goes back over nothing,
    # and `\\r\\n` is a line break
    expect(printed).to_have_text("step  29 loss 1.0000\ndone\na\nb\n")
