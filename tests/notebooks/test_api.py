"""The notebook API: record a snippet or a call, read the numbers, save, export, display."""

from __future__ import annotations

import json
import random
import re
from pathlib import Path

import pytest
import torch

import gradwalk
from gradwalk.notebook import called_with, unpack

CUBIC = """
# y = x**3 - 4x
import torch

x = torch.tensor(2.5, requires_grad=True)
y = x**3 - 4*x
y.backward()
print(x.grad)
"""

w = torch.tensor([0.5, -1.0], requires_grad=True)


def squared_error(x: torch.Tensor, target: float) -> torch.Tensor:
    pred = (w * x).sum()
    loss = (pred - target) ** 2
    loss.backward()
    return loss


def test_watch_records_a_snippet() -> None:
    rec = gradwalk.watch(CUBIC)
    assert rec.status == "ok"
    assert rec.grads == {"x": 14.75}
    assert rec.stdout == "tensor(14.7500)\n"
    assert rec.title == "y = x**3 - 4x"
    assert "x.grad = 14.75" in repr(rec)
    assert rec.trace.source.startswith("# y = x**3 - 4x\n")  # dedented, no blank first line


def test_grads_keep_each_gradients_shape_as_pytorchs_tolist_does() -> None:
    source = (
        "import torch\n"
        "w = torch.arange(6.0).reshape(2, 3).requires_grad_()\n"
        "e = torch.ones(2, 0, 3, requires_grad=True)\n"
        "big = torch.ones(10, 10, requires_grad=True)\n"
        "((w * w).sum() + e.sum() + big.sum()).backward()\n"
    )
    grads = gradwalk.watch(source).grads
    plain: dict[str, torch.Tensor] = {}
    exec(source, plain)
    # a 2x3 gradient was a flat list of 6, as the trace stores it
    assert grads["w"] == plain["w"].grad.tolist() == [[0.0, 2.0, 4.0], [6.0, 8.0, 10.0]]
    assert grads["e"] == plain["e"].grad.tolist() == [[], []]
    summary = grads["big"]  # 100 elements: not in the trace whole
    assert (summary.kind, summary.shape, summary.norm) == ("summary", [10, 10], 10.0)


def test_watch_call_records_a_function_with_the_notebooks_names() -> None:
    w.grad = None
    rec = gradwalk.watch_call(squared_error, torch.tensor([2.0, 1.0]), 3.0)
    # pred = 1 - 1 = 0, loss = 9, dloss/dw = 2 (pred - 3) x = [-12, -6], on the notebook's own w
    assert rec.result.item() == 9.0
    assert w.grad.tolist() == [-12.0, -6.0]
    assert rec.grads == {"w": [-12.0, -6.0]}
    assert "def squared_error(x: torch.Tensor, target: float)" in rec.trace.source
    assert rec.title == "squared_error(…)"


def test_watch_call_sees_a_closure_and_a_bound_method() -> None:
    scale = torch.tensor(3.0, requires_grad=True)

    def scaled(v: torch.Tensor) -> torch.Tensor:
        out = (scale * v).sum()
        out.backward()
        return out

    assert gradwalk.watch_call(scaled, torch.ones(2)).grads == {"scale": 2.0}

    class Model(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc = torch.nn.Linear(2, 1)

        def step(self, x: torch.Tensor) -> float:
            loss = self.fc(x).pow(2).mean()
            loss.backward()
            return loss.item()

    model = Model()
    rec = gradwalk.watch_call(model.step, torch.ones(3, 2))
    assert rec.status == "ok" and isinstance(rec.result, float)
    assert model.fc.weight.grad is not None


def test_watch_call_refuses_what_it_cannot_rerun() -> None:
    with pytest.raises(TypeError, match="defined with def"):
        gradwalk.watch_call(lambda: None)
    with pytest.raises(TypeError, match="defined with def"):
        gradwalk.watch_call(len, [1])
    with pytest.raises(RuntimeError, match="watch_call"):
        called_with({})


def test_recording_puts_the_random_state_back() -> None:
    torch.manual_seed(123)
    random.seed(123)
    expected = (torch.rand(1).item(), random.random())
    torch.manual_seed(123)
    random.seed(123)
    gradwalk.watch("import torch\ntorch.rand(5)\n")  # seeds torch and random with 0 inside
    assert (torch.rand(1).item(), random.random()) == expected


def test_save_load_and_export(tmp_path: Path) -> None:
    rec = gradwalk.watch(CUBIC)
    saved = rec.save(tmp_path / "cubic.trace.json")
    assert json.loads(saved.read_text())["format"] == "gradwalk-trace"
    again = gradwalk.load(saved)
    assert again.grads == rec.grads and again.title == "y = x**3 - 4x"
    page = rec.export(tmp_path / "cubic.html", view="graph", step=3).read_text()
    assert page.startswith("<!doctype html>") and 'id="gradwalk-elk-worker"' in page
    assert '"view": "graph", "step": 3' in page
    # what `gradwalk export` offers (--hide-controls, --no-elk), export() offers too
    bare = rec.export(tmp_path / "bare.html", controls=False, elk=False).read_text()
    assert '"controls": false' in bare and 'id="gradwalk-elk-worker"' not in bare
    assert '"controls": true' in page


def test_the_display_is_the_export_in_a_sandboxed_frame() -> None:
    rec = gradwalk.watch(CUBIC)
    html = rec._repr_html_()
    assert html.startswith('<iframe class="gradwalk-view"')
    assert 'sandbox="allow-scripts allow-popups allow-downloads"' in html
    page = unpack(html)
    assert '<div id="gradwalk-viewer">' in page and 'id="gradwalk-elk-worker"' not in page
    shown = unpack(rec.show("code", step=2, height=400, elk=True)._repr_html_())
    assert '"view": "code", "step": 2' in shown and 'id="gradwalk-elk-worker"' in shown
    assert "height:400px" in rec.show(height=400)._repr_html_()
    charts = unpack(rec.show("charts", yscale="log", per_parameter=True)._repr_html_())
    assert '"yscale": "log", "perParam": true' in charts
    with pytest.raises(ValueError, match="yscale must be one of auto, linear, log"):
        rec.html(yscale="cubic")
    # show() refuses a bad choice where it is called, not later as the notebook displays it
    with pytest.raises(ValueError, match="view must be one of graph, stepper"):
        rec.show("bogus")
    with pytest.raises(ValueError, match="step must be 0 or more"):
        rec.show(step=-1)
    # another recording rides along, drawn dashed on the charts (the viewer reads it from the page)
    other = gradwalk.watch(CUBIC.replace("2.5", "1.5"))
    both = unpack(rec.show("charts", compare=other)._repr_html_())
    assert '"compare": "compared"' in both
    carried = re.search(r'id="gradwalk-compare">(.*?)</script>', both, re.S)
    assert carried is not None and json.loads(carried.group(1)) == json.loads(other.to_json())


def test_hidden_charts_ride_in_the_page(tmp_path: Path) -> None:
    rec = gradwalk.watch(CUBIC)

    def hidden(page: str) -> list[str]:
        found = re.search(r'id="gradwalk-options">(.*?)</script>', page, re.S)
        assert found is not None
        return list(json.loads(found.group(1))["hide"])

    assert hidden(rec.html()) == []
    assert hidden(rec.html(hide=["grad"])) == ["grad"]
    assert hidden(unpack(rec.show("charts", hide=["grad", "update"])._repr_html_())) == ["grad", "update"]
    assert hidden(rec.export(tmp_path / "c.html", hide=("metric:val_acc",)).read_text()) == ["metric:val_acc"]
    assert hidden(rec.html(hide=["metric:acc (%)"])) == ["metric:acc (%)"]
    with pytest.raises(ValueError, match=r"'metric:a\\nb' is not a chart id"):
        rec.html(hide=["metric:a\nb"])
