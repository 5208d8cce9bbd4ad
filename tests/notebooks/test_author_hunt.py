"""What a course author runs into: a bad option said where it is given, snippets from files,
a notebook's torch state kept, and ``gradwalk export`` failing in words, not a traceback."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch

import gradwalk
from gradwalk.cli import main
from tests.server.test_export import options_of

CUBIC = """
# y = x**3 - 4x
import torch
x = torch.tensor(2.5, requires_grad=True)
y = x**3 - 4*x
y.backward()
"""


@pytest.fixture(scope="module")
def rec() -> gradwalk.Recording:
    return gradwalk.watch(CUBIC)


@pytest.mark.parametrize(
    ("call", "error", "words"),
    [
        (lambda r: r.show(theme="purple"), ValueError, "theme must be one of light, dark"),
        (lambda r: r.html(theme="Dark"), ValueError, "theme must be one of light, dark"),
        (lambda r: r.show(height=0), ValueError, "height must be a whole number of pixels"),
        (lambda r: r.show(height="500px"), ValueError, "height must be a whole number of pixels"),
        (lambda r: r.show(step="3"), ValueError, "step must be a whole number"),
        (lambda r: r.show(step=2.5), ValueError, "step must be a whole number"),
        (lambda r: r.show(step=True), ValueError, "step must be a whole number"),
        (lambda r: r.show(controls="hide"), ValueError, "controls must be True or False"),
        (lambda r: r.show(per_parameter="yes"), ValueError, "per_parameter must be True or False"),
        (lambda r: r.show("charts", compare="fast"), TypeError, "compare must be another Recording"),
        (lambda r: r.html(compare=r.trace), TypeError, "compare must be another Recording"),
        (lambda r: r.show("charts", hide=["grads"]), ValueError, "'grads' is no chart"),
        (lambda r: r.html(hide=["val_acc"]), ValueError, "'val_acc' is no chart"),
    ],
    ids=[
        "show-theme",
        "html-theme",
        "height-0",
        "height-str",
        "step-str",
        "step-float",
        "step-bool",
        "controls-str",
        "per-parameter-str",
        "compare-str",
        "compare-trace",
        "hide-typo",
        "hide-metric-without-prefix",
    ],
)
def test_a_bad_option_is_refused_where_it_is_given(
    rec: gradwalk.Recording, call: Callable[[Any], Any], error: type[Exception], words: str
) -> None:
    # show() must refuse at the call: the notebook renders the display later, out of sight
    with pytest.raises(error, match=words):
        call(rec)


def test_good_options_still_pass(rec: gradwalk.Recording, tmp_path: Path) -> None:
    shown = rec.show("charts", step=0, height=300, theme="dark", controls=False, hide=["grad", "metric:acc"])
    assert shown._repr_html_().startswith('<iframe class="gradwalk-view"')
    assert rec.show(hide=None)._repr_html_()
    page = rec.export(tmp_path / "p.html", theme="light", compare=rec, hide=("cuda",)).read_text()
    assert '"theme": "light"' in page


def test_export_refuses_a_bad_theme_before_writing(rec: gradwalk.Recording, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="theme must be one of light, dark"):
        rec.export(tmp_path / "p.html", theme="purple")
    assert not (tmp_path / "p.html").exists()


def test_a_recording_puts_back_the_notebooks_torch_modes() -> None:
    assert torch.is_grad_enabled() and torch.get_default_dtype() == torch.float32
    try:
        gradwalk.watch(
            "import torch\n"
            "torch.set_grad_enabled(False)\n"
            "torch.set_default_dtype(torch.float64)\n"
            "torch.autograd.set_detect_anomaly(True)\n"
        )
        # the notebook's next cell would silently build no graph, in float64, slowly
        assert torch.is_grad_enabled()
        assert torch.get_default_dtype() == torch.float32
        assert not torch.is_anomaly_enabled()
    finally:
        torch.set_grad_enabled(True)
        torch.set_default_dtype(torch.float32)
        torch.autograd.set_detect_anomaly(False)


def test_watch_records_a_file_given_as_a_path(tmp_path: Path) -> None:
    snippet = tmp_path / "lesson.py"
    snippet.write_text(CUBIC)
    rec = gradwalk.watch(snippet)
    assert rec.status == "ok" and rec.grads == {"x": 14.75}
    assert rec.title == "y = x**3 - 4x" and rec.trace.events[0].filename == "lesson.py"
    snippet.write_text(CUBIC.replace("# y = x**3 - 4x\n", ""))
    assert gradwalk.watch(snippet).title == "lesson"  # no first comment: the file's name


def test_watch_says_what_it_takes(tmp_path: Path) -> None:
    snippet = tmp_path / "lesson.py"
    snippet.write_text(CUBIC)
    # a file's name as a str would be recorded as code (a SyntaxError or a NameError)
    with pytest.raises(ValueError, match=r"for the file, pass Path\("):
        gradwalk.watch(str(snippet))

    def step() -> None:
        pass

    with pytest.raises(TypeError, match=r"gradwalk\.watch_call"):
        gradwalk.watch(step)  # type: ignore[arg-type]
    with snippet.open() as f, pytest.raises(TypeError, match=r"a Path to a \.py file, not TextIOWrapper"):
        gradwalk.watch(f)  # type: ignore[arg-type]


def export(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    """Run ``gradwalk export ARGV``; return its status and what it said on stderr."""
    status = main(["export", *argv])
    return status, capsys.readouterr().err


@pytest.fixture(scope="module")
def trace_file(rec: gradwalk.Recording, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return rec.save(tmp_path_factory.mktemp("traces") / "cubic.trace.json")


def test_cli_export_says_when_it_cannot_write(
    trace_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status, said = export(capsys, str(trace_file), "-o", str(tmp_path / "no-such-folder" / "x.html"))
    assert status == 2 and "cannot write" in said and "No such file or directory" in said
    status, said = export(capsys, str(trace_file), "-o", str(tmp_path))
    assert status == 2 and "cannot write" in said


def test_cli_export_of_a_snippet_says_to_record_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    snippet = tmp_path / "cubic.py"
    snippet.write_text(CUBIC)
    status, said = export(capsys, str(snippet), "-o", str(tmp_path / "x.html"))
    assert status == 2 and f"gradwalk record {snippet}" in said


def test_cli_export_of_a_file_that_is_not_json_ends_its_sentence(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_text("# notes, not JSON")
    status, said = export(capsys, str(notes))
    assert status == 2 and said.strip().endswith("Invalid JSON: expected value at line 1 column 1"), said


def test_cli_export_refuses_a_hide_that_names_no_chart(
    trace_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status, said = export(capsys, str(trace_file), "--hide", "grads", "-o", str(tmp_path / "x.html"))
    assert status == 2 and "--hide: 'grads' is no chart" in said
    assert not (tmp_path / "x.html").exists()


def test_watch_takes_limits_as_a_dict_and_names_a_bad_field(tmp_path: Path) -> None:
    # watch(limits={"max_ops": 5}) raised "'dict' object has no attribute 'max_ops'"
    rec = gradwalk.watch(
        "import torch\nx = torch.ones(3, requires_grad=True)\nfor _ in range(10):\n    x = x * 2\n",
        limits={"max_ops": 5},
    )
    assert rec.trace.events[-1].counts.dropped_ops > 0
    with pytest.raises(ValueError, match="limits: max_opps: Extra inputs are not permitted"):
        gradwalk.watch("x = 1\n", limits={"max_opps": 5})
    with pytest.raises(ValueError, match="limits: max_ops"):
        gradwalk.watch("x = 1\n", limits={"max_ops": -1})
    with pytest.raises(TypeError, match="limits must be a Limits or a dict"):
        gradwalk.watch("x = 1\n", limits=5)


def test_load_of_a_file_that_is_no_trace_says_so_in_a_line(tmp_path: Path) -> None:
    # gradwalk.load raised pydantic's whole ValidationError report
    bad = tmp_path / "bad.json"
    bad.write_text('{"format": "gradwalk-trace", "source": "x = 1\\n", "events": [{"type": "nope"}]}')
    with pytest.raises(ValueError, match=r"bad\.json is not a gradwalk trace: .* at events\.0") as caught:
        gradwalk.load(bad)
    assert "\n" not in str(caught.value)


def test_a_step_past_the_end_is_refused_where_it_is_given(
    rec: gradwalk.Recording, trace_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # cubic's backward walk has 5 steps (0 to 4): step=5 (a 1-based count, or a step of
    # another run) made a page that opened at the last step without a word
    past = r"step 5 is past the end: this run has 5 backward steps \(0 to 4\)"
    with pytest.raises(ValueError, match=past):
        rec.show("graph", step=5)
    with pytest.raises(ValueError, match=past):
        rec.export(tmp_path / "p.html", step=5)
    assert not (tmp_path / "p.html").exists()
    status, said = export(capsys, str(trace_file), "--step", "5", "-o", str(tmp_path / "x.html"))
    assert status == 2 and "gradwalk export: --step 5 is past the end: this run has 5 backward steps" in said
    assert not (tmp_path / "x.html").exists()
    # the last step is one
    assert rec.show("graph", step=4)._repr_html_()
    status, said = export(capsys, str(trace_file), "--step", "4", "-o", str(tmp_path / "x.html"))
    assert status == 0, said


def test_a_step_of_a_run_without_backward_is_refused() -> None:
    forward = gradwalk.watch("import torch\nx = torch.ones(3, requires_grad=True)\ny = (x * 2).sum()\n")
    with pytest.raises(ValueError, match=r"this run called no backward\(\): there is no step 0 to open"):
        forward.show("tape", step=0)
    assert forward.show("tape")._repr_html_()


def test_a_call_is_drawn_where_given_and_one_not_recorded_in_full_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    loop = gradwalk.watch(
        "import torch\nx = torch.tensor(2.0, requires_grad=True)\n"
        "for _ in range(3):\n    (x * x).backward()\n"
    )
    trace = loop.save(tmp_path / "loop.json")
    assert options_of(loop.html(view="graph", call=2))["call"] == 1
    assert loop.show("graph", call=3)._repr_html_()
    with pytest.raises(ValueError, match=r"call 4 is no backward\(\) call whose graph was recorded: the calls recorded in full are 1, 2, 3"):
        loop.show("graph", call=4)
    with pytest.raises(ValueError, match="call must be a whole number from 1"):
        loop.export(tmp_path / "p.html", call=0)
    assert not (tmp_path / "p.html").exists()
    status, said = export(capsys, str(trace), "--call", "2", "-o", str(tmp_path / "x.html"))
    assert status == 0, said
    assert options_of((tmp_path / "x.html").read_text())["call"] == 1
    status, said = export(capsys, str(trace), "--call", "9", "-o", str(tmp_path / "y.html"))
    assert status == 2 and "gradwalk export: --call 9 is no backward() call whose graph was recorded" in said
    # "all": every call's graph together, whatever the run's default
    assert options_of(loop.html(view="graph", call="all"))["call"] == "all"
    assert options_of(loop.html(view="graph"))["call"] is None
    status, said = export(capsys, str(trace), "--call", "all", "-o", str(tmp_path / "all.html"))
    assert status == 0, said
    assert options_of((tmp_path / "all.html").read_text())["call"] == "all"
    with pytest.raises(SystemExit) as refused:  # argparse's own refusal, as for --step two
        export(capsys, str(trace), "--call", "every", "-o", str(tmp_path / "z.html"))
    assert refused.value.code == 2
    said = capsys.readouterr().err
    assert "argument --call: a backward() call counted from 1, or 'all'" in said, said
    assert not (tmp_path / "z.html").exists()
    with pytest.raises(ValueError, match="or 'all'"):
        loop.show("graph", call="every")
    assert not (tmp_path / "y.html").exists()


def test_watch_refuses_a_device_it_cannot_record_on() -> None:
    # device="banana" recorded the snippet into PyTorch's list of device types
    with pytest.raises(ValueError, match=r"device: expected cpu, cuda or cuda:N: 'banana'"):
        gradwalk.watch("import torch\nx = torch.ones(2, device=device)\n", device="banana")
    if torch.cuda.is_available():  # a GPU machine records on it (tests/engine/test_cuda.py)
        assert gradwalk.watch("x = 1\n", device="cuda").status == "ok"
    else:
        with pytest.raises(ValueError, match=r"device: CUDA is not available here \(no GPU was found\)"):
            gradwalk.watch("x = 1\n", device="cuda")
