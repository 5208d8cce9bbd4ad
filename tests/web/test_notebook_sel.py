"""A notebook's ``sel``: ``rec.export(..., sel="n1")`` and ``rec.show(sel=...)`` open with that
node picked, as ``gradwalk export --sel`` does; one that is not one is refused at the call."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

import gradwalk
from gradwalk.notebook import Recording, unpack

from .conftest import expect, wait_viewer

CUBIC = """
import torch
x = torch.tensor(2.5, requires_grad=True)
y = x**3 - 4*x
y.backward()
"""


@pytest.fixture(scope="module")
def rec() -> Recording:
    return gradwalk.watch(CUBIC, title="cubic")


def node_named(rec: Recording, name: str) -> int:
    """The id of the run's grad_fn node called ``name``."""
    ids = [e.id for e in rec.trace.events if e.type == "node" and e.name == name]
    assert len(ids) == 1, [(e.type, getattr(e, "name", None)) for e in rec.trace.events]
    return int(ids[0])


def options_of(page: str) -> dict[str, Any]:
    """The page's ``#gradwalk-options`` JSON, as the viewer reads it."""
    found = re.search(r'<script type="application/json" id="gradwalk-options">(.*?)</script>', page, re.S)
    assert found is not None, page[:300]
    options: dict[str, Any] = json.loads(found.group(1))
    return options


def open_offline(page: Any, path: Path) -> None:
    """Open ``path`` from disk with every network request refused, as a reader's copy opens."""
    page.context.route(
        "**/*",
        lambda route: (
            route.continue_() if route.request.url.startswith(("file:", "blob:", "data:")) else route.abort()
        ),
    )
    page.goto(path.resolve().as_uri())
    wait_viewer(page)


@pytest.mark.browser
def test_an_exported_notebook_page_opens_with_the_node_selected(
    page: Any, rec: Recording, tmp_path: Path
) -> None:
    pow_node = node_named(rec, "PowBackward0")
    out = rec.export(tmp_path / "x.html", view="graph", sel=f"n{pow_node}")
    assert out == tmp_path / "x.html"
    open_offline(page, out)
    viewer = page.evaluate(
        """() => ({
            view: window.gradwalkViewer.view,
            selection: window.gradwalkViewer.store.state.selection,
            ringed: window.gradwalkViewer.graph.core.$('node:selected').map((n) => n.id()),
        })"""
    )
    assert viewer == {
        "view": "graph",
        "selection": {"kind": "node", "id": pow_node},
        "ringed": [f"n{pow_node}"],
    }
    # the inspector shows the node picked, not the "click a node" hint
    page.click("[role=tab][data-view=inspector]")
    expect(page.locator(".gw-viewer .gw-inspector-body .gw-inspect-title")).to_contain_text("PowBackward0")


@pytest.mark.browser
def test_a_notebook_page_opens_the_inspector_on_the_node_asked_for(
    page: Any, rec: Recording, tmp_path: Path
) -> None:
    sub_node = node_named(rec, "SubBackward0")
    out = rec.export(tmp_path / "inspect.html", view="inspector", sel=f"n{sub_node}")
    open_offline(page, out)
    assert page.evaluate("() => window.gradwalkViewer.view") == "inspector"
    expect(page.locator(".gw-viewer .gw-inspector-body .gw-inspect-title")).to_contain_text("SubBackward0")
    ringed = page.evaluate("() => window.gradwalkViewer.graph.core.$('node:selected').map((n) => n.id())")
    assert ringed == [f"n{sub_node}"]


def test_show_and_html_carry_sel_into_the_page(rec: Recording) -> None:
    pow_node = node_named(rec, "PowBackward0")
    shown = unpack(rec.show("inspector", sel=f"n{pow_node}")._repr_html_())
    assert options_of(shown)["selection"] == {"kind": "node", "id": pow_node}
    assert options_of(rec.html(sel="t0"))["selection"] == {"kind": "tensor", "id": 0}
    assert options_of(rec.html())["selection"] is None


def test_a_sel_the_run_did_not_make_is_refused_at_the_call(rec: Recording, tmp_path: Path) -> None:
    missing = "sel n9999: this run made no node 9999"
    with pytest.raises(ValueError, match=re.escape(missing)):
        rec.show(sel="n9999")
    with pytest.raises(ValueError, match=re.escape(missing)):
        rec.html(sel="n9999")
    with pytest.raises(ValueError, match=re.escape("sel t9999: this run made no tensor 9999")):
        rec.export(tmp_path / "never.html", sel="t9999")
    assert not (tmp_path / "never.html").exists()


@pytest.mark.parametrize("sel", ["x", "n", "12", "N1", " n1", "n1.5", 1])
def test_a_sel_that_is_not_one_is_refused_at_the_call(rec: Recording, sel: Any) -> None:
    malformed = "sel must name a node (n12) or a tensor (t3), as the app's links write it"
    with pytest.raises(ValueError, match=re.escape(malformed)):
        rec.html(sel=sel)
    with pytest.raises(ValueError, match=re.escape(malformed)):
        rec.show(sel=sel)
