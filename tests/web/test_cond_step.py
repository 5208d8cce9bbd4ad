"""A ``torch.cond`` in the backward walk (fidelity hunt 53): its node, CondAutogradOpBackward,
has a rule of its own in the step card, and the gradient it sends is PyTorch's."""

from __future__ import annotations

from typing import Any

import pytest

from tests.engine.test_fidelity_hunt53 import COND

from .conftest import card_of, expect, open_stepper, settle, shot

pytestmark = pytest.mark.browser


def test_a_cond_node_says_which_branch_sent_the_gradient(page: Any) -> None:
    open_stepper(page, COND)
    card = card_of(page, "CondAutogradOpBackward")
    expect(card).to_contain_text("out = the branch the predicate chose, applied to the operands")
    expect(card).to_contain_text("grad through the branch that ran")
    expect(card).not_to_contain_text("no rule")
    # what it sends x is cos(x), as the sin branch's gradient (PyTorch's own numbers)
    expect(card).to_contain_text("[0.8776, 0.07074]")
    settle(page)
    shot(page, "cond-step-card")
