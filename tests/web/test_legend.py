"""The legend under the graph says what the nodes' looks mean: the graph's kinds of node,
and, while the stepper shows a backward step, the walk's looks (a node still to run is drawn
dashed, which the graph's legend gave to "plain input")."""

from __future__ import annotations

from typing import Any

import pytest

from .conftest import expect, open_stepper, shot

pytestmark = pytest.mark.browser

# a Hessian-vector product: the second call walks nodes the first call made, and frees them
HESSIAN_VECTOR = """import torch

x = torch.tensor([1.0, 2.0], requires_grad=True)
y = (x ** 3).sum()
(g,) = torch.autograd.grad(y, x, create_graph=True)
v = torch.tensor([1.0, 0.0])
(hv,) = torch.autograd.grad(g @ v, x)
"""

SAVED = "saved for backward"  # the dotted look the walk leaves as it is, last in its legend
GRAPH_ENTRIES = [
    "op (grad_fn)",
    "AccumulateGrad",
    "leaf, requires grad",
    "parameter",
    "plain input",
    "saved for backward",
]


def _legend(page: Any) -> list[str]:
    """The legend's entries on screen, in the order they read (left to right, line by line)."""
    texts: list[str] = page.evaluate(
        """() => [...document.querySelectorAll('.gw-pane-graph .gw-legend li')]
            .filter((li) => li.offsetParent !== null)
            .sort((a, b) => a.getBoundingClientRect().top - b.getBoundingClientRect().top
                || a.getBoundingClientRect().left - b.getBoundingClientRect().left)
            .map((li) => li.querySelector('.gw-legend-text').textContent)"""
    )
    return texts


def test_the_legend_says_what_a_backward_steps_looks_mean(page: Any) -> None:
    open_stepper(page, HESSIAN_VECTOR)
    # the first call's first node runs; the rest of its walk is still to run, and the nodes
    # only the second call walks are not in it
    assert _legend(page) == ["running now", "still to run", "not in this backward call", SAVED]
    # the second call at its MulBackward0: Dot ran, Mul runs, MulBackward1 and Pow wait
    page.locator(".gw-call-tabs [role=tab]").nth(1).click()
    page.locator(".gw-walk-item", has_text="MulBackward0").click()
    expect(page.locator(".gw-step-card .gw-node-name")).to_have_text("MulBackward0")
    assert page.evaluate("() => window.gradwalk.graph.core.nodes('.pending').length") == 2
    assert _legend(page) == ["running now", "ran", "still to run", "not in this backward call", SAVED]
    shot(page, "legend-walk")
    # its end: nothing runs or waits; the graph it walked is freed
    page.keyboard.press("End")
    expect(page.locator(".gw-graph-banner")).to_contain_text("Graph freed")
    assert _legend(page) == ["not in this backward call", "freed: its saved tensors are gone", SAVED]
    # off the stepper the legend is the graph's again
    page.click("#gw-tab-tape")
    expect(page.locator(".gw-pane-graph .gw-legend")).to_have_attribute("data-mode", "graph")
    # (only the kinds this graph has: x, a leaf; v, a plain input; no parameter)
    assert _legend(page) == [e for e in GRAPH_ENTRIES if e != "parameter"]
