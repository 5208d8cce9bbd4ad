"""Names in other scripts read as names in the app: the stepper, the walk's rules and the
output's notes took `\\w` (ASCII in JavaScript) for a name's letters, so `损失.backward()`
read "(损失).backward() finished", the leaf "(λ).grad", and the note for `h_ñ.grad` said to
call `t.retain_grad()` (hunt 65, pasted source)."""

from __future__ import annotations

from typing import Any

import pytest

from .conftest import expect, open_app, run_source

pytestmark = pytest.mark.browser

SOURCE = """import torch
λ = torch.tensor(2.0, requires_grad=True)
h_ñ = λ * 3
损失 = h_ñ ** 2
损失.backward()
print(h_ñ.grad)
"""


def test_non_ascii_names_read_as_names_in_the_stepper_and_the_output(page: Any) -> None:
    open_app(page)
    run_source(page, SOURCE)
    note = page.locator(".gw-notice", has_text="h_ñ.grad is None")
    expect(note).to_contain_text("call h_ñ.retain_grad() before backward()")
    expect(note).to_contain_text("Read λ.grad instead")
    page.click("#gw-tab-stepper")
    page.keyboard.press("End")
    card = page.locator(".gw-step-card")
    expect(card).to_contain_text("损失.backward() finished")
    expect(card).to_contain_text("λ.grad: None → 36")
    expect(card).not_to_contain_text("(λ)")
    expect(card).not_to_contain_text("(损失)")
