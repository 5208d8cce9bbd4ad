"""A snippet behaves as a plain script: __main__, classes, functions, errors with their lines."""

from __future__ import annotations

import contextlib
import gc
import io
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
import torch

from engine import queries as q
from engine import record
from engine.eager import NOTICE
from tests.conftest import CASES_DIR, gradwalk_cli
from tests.engine.test_as_without_gradwalk import AUTOGRAD_FEATURES, recorded_as_plain


def test_main_guard_classes_and_functions_work() -> None:
    src = (
        "import torch\n"
        "class Box:\n    def __init__(self, v):\n        self.v = v\n"
        "def square(t):\n    return t * t\n"
        "if __name__ == '__main__':\n"
        "    b = Box(torch.tensor(3.0, requires_grad=True))\n"
        "    y = square(b.v)\n    y.backward()\n    print(b.v.grad.item(), device)\n"
    )
    trace = record(src)
    assert trace.events[-1].status == "ok"
    assert q.stdout(trace) == "6.0 cpu\n"
    mul = next(e for e in trace.events if e.type == "op" and e.name == "mul")
    assert mul.line == 6 and mul.top_line == 9


GLOBAL_NAMES = (
    "import torch\n"
    "for i in range(2):\n    pass\n"  # a loop and an except clause: the code gradwalk wraps
    "try:\n    raise KeyError\nexcept KeyError:\n    pass\n"
    "print(sorted(globals()), __doc__, __spec__, __package__, __annotations__, __cached__)\n"
    "print(sorted(dir()))\n"
)


def test_a_snippets_globals_are_a_plain_scripts_and_device(tmp_path: Path) -> None:
    # gradwalk's calls at a loop's end reach it through a module: no names of its own in the
    # snippet's globals (four of them showed in dir() and globals()), and __doc__, __spec__
    # and the rest are there as in a script run by python (print(__doc__) raised NameError)
    script = tmp_path / "plain.py"
    script.write_text(
        GLOBAL_NAMES.replace("globals()", "[*globals(), 'device']").replace("dir()", "[*dir(), 'device']")
    )
    plain = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, check=True)
    trace = record(GLOBAL_NAMES)
    assert trace.events[-1].status == "ok"
    out = q.stdout(trace)
    assert out == plain.stdout
    assert "gradwalk" not in out


def test_a_snippet_that_shadows_what_the_loop_wrappers_use_runs_as_written() -> None:
    # BaseException renamed, __import__ replaced: the loop wrappers use neither name of the
    # snippet's (one that names __import__ runs unwrapped), and the errors are the snippet's
    src = (
        "import torch\n"
        "BaseException = ValueError\n"
        "w = torch.ones(2, requires_grad=True)\n"
        "for i in range(3):\n    (w * i).sum().backward()\n"
        "print(w.grad.tolist())\n"
        "for k in range(2):\n    {}[k]\n"  # line 8: a KeyError out of a wrapped loop
    )
    trace = record(src)
    assert q.stdout(trace) == "[3.0, 3.0]\n"
    (err,) = q.errors(trace)
    assert err.exc_type == "KeyError" and err.line == 8
    own_import = (
        "real = __import__\n__import__ = None\nm = real('math')\nfor i in range(2):\n    print(m.sqrt(4.0))\n"
    )
    trace = record(own_import)
    assert trace.events[-1].status == "ok" and q.stdout(trace) == "2.0\n2.0\n"


def test_syntax_error_is_an_error_event_with_its_line() -> None:
    trace = record("import torch\nx = (1,\ny = 2\n")
    err = q.errors(trace)[0]
    assert err.exc_type == "SyntaxError" and err.line in (2, 3)
    assert trace.events[-1].status == "error"


def test_source_python_cannot_compile_is_an_error_event_not_a_crash() -> None:
    # a lone surrogate (JSON can carry "\\ud800"), a null byte: Python refuses to compile
    # them; the first escaped the run as an exception
    for source, exc_type in (('x = "\ud800"\n', "UnicodeEncodeError"), ("print(1)\x00\n", "SyntaxError")):
        trace = record(source)
        (err,) = q.errors(trace)
        assert err.exc_type == exc_type
        assert trace.events[-1].status == "error"


def test_exception_line_is_the_snippet_line() -> None:
    trace = record("import torch\n\nx = torch.ones(3)\ny = x @ torch.ones(4)\n")
    err = q.errors(trace)[0]
    assert err.line == 4 and err.exc_type == "RuntimeError"
    assert "snippet.py" in err.traceback and "site-packages" not in err.traceback


def test_non_scalar_backward_gets_an_explanation() -> None:
    trace = record("import torch\nx = torch.ones(3, requires_grad=True)\n(x * 2).backward()\n")
    err = q.errors(trace)[0]
    assert err.line == 3 and err.hint and "scalar" in err.hint


def _output_recorded_alone(tmp_path, name: str, source: str) -> str:
    """What ``source`` (as file ``name``) printed, recorded by ``gradwalk record`` in a
    process of its own, as a worker records (pytest catches warnings before they show)."""
    snippet = tmp_path / name
    snippet.write_text(source)
    out = tmp_path / "trace.json"
    subprocess.run(
        [sys.executable, "-m", "gradwalk.cli", "record", str(snippet), "-o", str(out)],
        capture_output=True,
        timeout=120,
    )
    from engine.events import trace_adapter

    return "".join(e.text for e in q.events_of(trace_adapter.validate_json(out.read_text()), "output"))


def test_warnings_point_at_the_snippets_line_as_without_gradwalk(tmp_path) -> None:
    # PyTorch's own warnings named gradwalk's tape mode (engine/tape.py:101) as their place,
    # and the snippet's own its internal file name
    text = _output_recorded_alone(
        tmp_path,
        "warns.py",
        "import warnings\nimport torch\nwarnings.warn('careful')\nx = torch.tensor(2.0, requires_grad=True)\n"
        "y = x * 3\n(y ** 2).backward()\nprint(y.grad)\n",
    )
    assert "warns.py:3: UserWarning: careful" in text
    assert "warns.py:7: UserWarning: The .grad attribute of a Tensor that is not a leaf" in text
    assert "  print(y.grad)" in text
    assert "engine" not in text and "gradwalk-snippet" not in text, text


def test_a_warning_reaches_the_trace_where_the_caller_records_warnings() -> None:
    # gradwalk handed a warning on to the showwarning it replaced: under a caller's
    # catch_warnings(record=True) (pytest's, a notebook's) that kept it out of the trace
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        trace = record(
            "import warnings\nimport torch\nwarnings.warn('careful')\nx = torch.tensor(2.0, requires_grad=True)\n"
            "y = x * 3\n(y ** 2).backward()\nprint(y.grad)\n",
            filename="warns.py",
        )
    text = "".join(e.text for e in q.events_of(trace, "output"))
    assert "warns.py:3: UserWarning: careful" in text
    assert "warns.py:7: UserWarning: The .grad attribute of a Tensor that is not a leaf" in text
    assert "  print(y.grad)" in text
    assert caught == []


def test_anomaly_modes_forward_trace_holds_only_the_snippets_frames(tmp_path) -> None:
    text = _output_recorded_alone(
        tmp_path,
        "nan.py",
        "import torch\nwith torch.autograd.set_detect_anomaly(True):\n    x = torch.tensor([0.0], requires_grad=True)\n"
        "    y = torch.sqrt(x) * 0\n    y.backward()\n",
    )
    frames = text.split("Traceback of forward call that caused the error:\n")[1].split(" (Triggered")[0]
    assert frames == '  File "nan.py", line 4, in <module>\n    y = torch.sqrt(x) * 0\n', text


def test_gradwalk_log_reaches_the_trace() -> None:
    trace = record("import gradwalk\nfor i in range(3):\n    gradwalk.log('acc', i / 2, step=i)\n")
    metrics = q.events_of(trace, "metric")
    assert [(m.name, m.value, m.step, m.line) for m in metrics] == [
        ("acc", 0.0, 0, 3),
        ("acc", 0.5, 1, 3),
        ("acc", 1.0, 2, 3),
    ]


def test_gradwalk_log_takes_a_loss_tensor_as_is_without_a_warning_or_an_op_on_the_tape() -> None:
    # float(loss) warned "Converting a tensor with requires_grad=True to a scalar" on the
    # snippet's stderr, pointing at the snippet's line as if the snippet had done it
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        trace = record(
            "import gradwalk, torch\nw = torch.tensor(2.0, requires_grad=True)\nloss = w * 3\n"
            "gradwalk.log('loss', loss, step=1)\n"
        )
    assert [str(w.message) for w in caught] == []
    assert [(m.name, m.value, m.step, m.line) for m in q.events_of(trace, "metric")] == [("loss", 6.0, 1, 4)]
    assert [e.text for e in q.events_of(trace, "output")] == []
    assert [op.name for op in q.events_of(trace, "op")] == ["tensor", "mul"]


@pytest.mark.parametrize(
    ("call", "exc_type", "message"),
    [
        ("1, step=True", "TypeError", "step must be a whole number, not True"),
        ("1, step=2.5", "TypeError", "step must be a whole number, not 2.5"),
        ("1, step=-1", "ValueError", "step must be from 0 to 2**53, not -1"),
        ("1, step=2**60", "ValueError", "step must be from 0 to 2**53, not 1152921504606846976"),
        ("torch.ones(3)", "ValueError", "value must be one number, not a tensor of shape (3,)"),
        ("'high'", "TypeError", "value must be a number, not 'high'"),
        ("None", "TypeError", "value must be a number, not NoneType"),
    ],
)
def test_gradwalk_log_refuses_what_the_charts_cannot_show_and_says_so(
    call: str, exc_type: str, message: str
) -> None:
    # step=True, a negative step or one past 2**53 (the charts' whole numbers) went into the
    # trace; a tensor of three values raised PyTorch's "a Tensor with 3 elements cannot be
    # converted to Scalar", which did not say it was gradwalk.log's argument
    trace = record(f"import gradwalk, torch\nx = 1\ngradwalk.log('acc', {call})\n")
    (error,) = q.events_of(trace, "error")
    assert (error.exc_type, error.message, error.line) == (exc_type, f"gradwalk.log: {message}", 3)
    assert q.events_of(trace, "metric") == []


def test_hooks_are_removed_after_a_failing_run() -> None:
    import torch

    record("import torch\nx = torch.ones(2, requires_grad=True)\nraise ValueError('boom')\n")
    assert torch._C._len_torch_function_stack() == 0
    y = torch.ones(2, requires_grad=True)
    (y * 3).sum().backward()
    assert y.grad.tolist() == [3.0, 3.0]


def test_cli_record_writes_a_trace_and_summary(tmp_path) -> None:
    snippet = tmp_path / "s.py"
    snippet.write_text(
        "import torch\nx = torch.tensor(2.5, requires_grad=True)\ny = x**3 - 4*x\ny.backward()\n"
    )
    out = tmp_path / "t.json"
    done = subprocess.run(
        [sys.executable, "-m", "gradwalk.cli", "record", str(snippet), "-o", str(out)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "x.grad = 14.75" in done.stdout and "status: ok" in done.stdout
    from engine.events import trace_adapter

    trace = trace_adapter.validate_json(out.read_text())
    assert trace.events[-1].status == "ok"


def test_cli_record_says_how_to_record_a_failing_metrics_only_iteration_and_refuses_bad_counts(
    tmp_path,
) -> None:
    from tests.engine.test_training import _FAILS_AT_STEP_8

    snippet = tmp_path / "loop.py"
    snippet.write_text(_FAILS_AT_STEP_8)

    def cli(*extra: str) -> subprocess.CompletedProcess[str]:
        argv = [sys.executable, "-m", "gradwalk.cli", "record", str(snippet), "-o", str(tmp_path / "t.json")]
        return subprocess.run([*argv, *extra], capture_output=True, text=True, timeout=120)

    first = cli()
    assert first.returncode == 1 and "--detail-every 8" in first.stdout
    again = cli("--detail-every", "8")
    assert again.returncode == 1 and "SigmoidBackward0 saved h for backward (line 8)" in again.stdout
    refused = cli("--detail-every", "-1")
    assert refused.returncode == 2 and "expected a whole number, 0 or more: '-1'" in refused.stderr


def test_recording_a_custom_function_keeps_none_of_its_classes_alive() -> None:
    # a worker records run after run, and each run makes the snippet's classes anew: a cache
    # keyed by node class kept every run's Function and its node class alive
    source = (CASES_DIR / "custom_function.py").read_text().replace("Cube", "Quintic")
    record(source)
    record(source)
    gc.collect()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # gc also holds deprecated torch aliases that warn when looked at
        alive = [o for o in gc.get_objects() if isinstance(o, type) and o.__name__.startswith("Quintic")]
    assert alive == []


def test_a_custom_function_called_on_the_snippets_thread_is_the_tapes() -> None:
    # a thread the snippet starts records in a tape mode of its own (NOTE [Threads] in
    # engine/threads.py): its Function.apply is on the tape, as on the main thread, and the
    # numbers are a plain run's
    source = AUTOGRAD_FEATURES["custom autograd.Function"].replace(
        "Square.apply(x).sum().backward()",
        "import threading\nout = []\nthread = threading.Thread(target=lambda: out.append(Square.apply(x)))\n"
        "thread.start()\nthread.join()\nout[0].sum().backward()",
    )
    trace = recorded_as_plain(source)
    (apply,) = [e for e in q.events_of(trace, "op") if e.api == "Square.apply"]
    assert (
        apply.line
        == source.splitlines().index(next(line for line in source.splitlines() if "Square.apply(x)" in line))
        + 1
    )


def test_cli_record_into_a_closed_pipe_writes_its_trace_quietly(tmp_path) -> None:
    # `gradwalk record s.py | head -1`: the summary's reader goes away after one line (a
    # BrokenPipeError traceback was printed after the trace was written)
    snippet = tmp_path / "s.py"
    snippet.write_text("import torch\nx = torch.ones(300, requires_grad=True)\n(x * 2).sum().backward()\n")
    out = tmp_path / "t.json"
    done = subprocess.run(
        f"{sys.executable} -m gradwalk.cli record {snippet} -o {out} | head -c 1",
        shell=True,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.stderr == "" and out.is_file()


def test_the_summary_says_a_cleared_grad_is_none() -> None:
    from engine.run import record
    from engine.summary import summarize

    source = (
        "import torch\nX = torch.ones(2)\nw = torch.tensor([1.0, 2.0], requires_grad=True)\n"
        "(w * X).sum().backward()\nw.grad = None\n"
    )
    assert "  w.grad = None" in summarize(record(source)).splitlines()


def test_the_summary_writes_gradients_short() -> None:
    # a 16-element gradient was written out whole, each float in full repr
    # (-0.005501430481672287, ...): a wall of digits per parameter of a small CNN
    from engine.run import record
    from engine.summary import summarize

    source = (
        "import torch\nb = torch.zeros(16, requires_grad=True)\nw = torch.tensor([1.0, 2.0], requires_grad=True)\n"
        "((b * torch.arange(16.0)).sum() + (w * w / 3).sum()).backward()\n"
    )
    lines = summarize(record(source)).splitlines()
    assert "  w.grad = [0.6667, 1.333]" in lines, lines
    assert "  b.grad = norm 35.21 [16]" in lines, lines  # sqrt(0² + 1² + ... + 15²)


def test_a_hook_on_a_gradient_is_recorded_with_its_tensor_and_line() -> None:
    from engine.run import record

    source = (
        "import torch\nx = torch.tensor([1.0, 2.0], requires_grad=True)\ny = x * 3\n"
        "y.register_hook(lambda g: g * 10)\nx.register_hook(lambda g: print(g))\n(y ** 2).sum().backward()\n"
    )
    trace = record(source)
    names = {e.id: e.name for e in trace.events if e.type in ("tensor", "tensor_named") and e.name}
    hooks = [(names[e.tensor], e.line) for e in trace.events if e.type == "hook_registered"]
    assert hooks == [("y", 4), ("x", 5)]
    assert not any(e.type == "op" and e.name == "register_hook" for e in trace.events)
    assert q.final_grads(trace)["x"] == [180.0, 360.0]  # the hook's doing, recorded as it ran


def test_torch_compile_runs_eagerly_and_says_so() -> None:
    """TorchDynamo cannot trace through the tape mode: while recording, torch.compile returns
    what it was given (functions, modules, and as a decorator), and the stderr says why."""
    trace = record(
        """
import torch
f = torch.compile(lambda x: (x.sin() ** 2).sum())
m = torch.compile(torch.nn.Linear(3, 1), backend="eager")
@torch.compile(fullgraph=True)
def g(x):
    return x * 3
x = torch.ones(3, requires_grad=True)
(f(x) + m(x).sum() + g(x).sum()).backward()
print(x.grad.shape, torch.compile is not None)
"""
    )
    assert not q.errors(trace)
    assert q.stdout(trace) == "torch.Size([3]) True\n"
    assert [e.text for e in q.events_of(trace, "output") if e.stream == "stderr"] == [NOTICE]
    assert {"sin", "pow", "linear", "mul"} <= {op.name for op in q.events_of(trace, "op")}
    assert torch.compile.__module__.startswith("torch")  # put back after the run


def test_what_gradwalk_fails_to_observe_is_counted_and_the_run_goes_on(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Fault injection (no natural failure is left to trigger): a detector and the optimizer
    metrics raise. Users get the run as without gradwalk, with ``counts.unrecorded`` saying
    how much was missed; the test suite's GRADWALK_STRICT=1 turns such failures into errors."""
    from engine import recorder as recorder_module
    from engine import training
    from engine.pitfalls import op_checks

    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("a tensor gradwalk cannot read")

    monkeypatch.setattr(recorder_module, "STRICT", False)
    monkeypatch.setattr(op_checks.OpChecks, "_check_broadcast", broken)
    monkeypatch.setattr(training.TrainingTracker, "_measure", broken)
    trace = record(
        "import torch\nw = torch.ones(2, requires_grad=True)\nopt = torch.optim.SGD([w], lr=0.1)\n"
        "for _ in range(2):\n    opt.zero_grad()\n    (w * 3).sum().backward()\n    opt.step()\nprint(w.tolist())\n"
    )
    assert not q.errors(trace)
    assert q.stdout(trace) == "[0.3999999761581421, 0.3999999761581421]\n"
    finished = q.events_of(trace, "run_finished")[0]
    assert finished.status == "ok" and finished.counts.unrecorded == 2 + 2  # 2 muls, 2 steps
    assert [s.grad_norm for s in q.optimizer_steps(trace)] == [None, None]


def test_a_warning_raised_in_an_optimizers_step_is_shown_where_it_is_without_gradwalk(tmp_path) -> None:
    # it read snippet.py:5 (the step() line) rather than the optimizer's own line (found by fuzzing)
    source = (
        "import torch, torch.nn as nn\nemb = nn.Embedding(4, 2, sparse=True)\n"
        "opt = torch.optim.Adagrad(emb.parameters())\nemb(torch.tensor([1])).sum().backward()\nopt.step()\n"
    )
    plain = subprocess.run([sys.executable, "-c", source], capture_output=True, text=True, timeout=60)
    assert "torch/optim/adagrad.py:" in plain.stderr, plain.stderr
    assert _output_recorded_alone(tmp_path, "step_warns.py", source) == plain.stderr


def test_warnings_from_pytorchs_python_functions_show_once_per_place_as_without_gradwalk(tmp_path) -> None:
    # F.mse_loss warns with stacklevel=2: the warning read torch/nn/functional.py (the
    # dispatch through the tape mode) for the snippet's line, and the same text from two
    # lines showed once, both keyed by gradwalk's line (engine hunt)
    source = (
        "import torch, torch.nn as nn, torch.nn.functional as F\n"
        "pred, target = torch.randn(4, 1), torch.randn(4)\n"
        "for i in range(3):\n    a = F.mse_loss(pred, target)\n"
        "b = F.l1_loss(pred, target)\n"
        "c = nn.MSELoss()(pred, target)\n"
        "p = F.softmax(torch.randn(2, 3))\n"
        "x = torch.ones(2, requires_grad=True)\ny = x * 2\nprint(y.grad)\nprint(y.grad)\n"
    )
    (tmp_path / "places.py").write_text(source)
    plain = subprocess.run(
        [sys.executable, "places.py"], capture_output=True, text=True, timeout=60, cwd=tmp_path
    )

    def warnings_in(text: str) -> list[str]:
        return [line for line in text.replace(f"{tmp_path}/", "").splitlines() if "Warning: " in line]

    expected = warnings_in(plain.stderr)
    assert len(expected) == 6 and expected[0].startswith("places.py:4: UserWarning: Using a target size"), (
        expected
    )
    assert warnings_in(_output_recorded_alone(tmp_path, "places.py", source)) == expected


def test_an_error_message_no_json_can_hold_is_written_as_pythons_stderr_writes_it() -> None:
    # a lone surrogate is a valid str but not UTF-8: the trace could not be written at all
    trace = record("import gradwalk\ngradwalk.log('x' + chr(0xDC80), 1.0)\nraise KeyError(chr(0xD801))\n")
    (error,) = q.events_of(trace, "error")
    assert error.message == "'\\ud801'" and error.line == 3
    assert "KeyError: '\\ud801'" in error.traceback
    assert trace.events[-1].message == "KeyError: '\\ud801'"
    assert [m.name for m in q.events_of(trace, "metric")] == ["x\\udc80"]
    assert "\\ud801" in trace.model_dump_json()


def test_an_object_whose_class_attribute_raises_breaks_no_scan_of_the_snippets_variables() -> None:
    # hostile (or badly mocked) code: isinstance() looks __class__ up, and gradwalk's scans of
    # the snippet's variables (models to name, tensors to name, optimizers, totals held) ended
    # the run as "crashed"; a model, a hand loop and a held total check each scan
    source = """import torch
class Sly:
    @property
    def __class__(self):
        raise RuntimeError("no class for you")
sly = Sly()
kept = [sly, {"sly": sly}]
model = torch.nn.Linear(2, 1)
w = torch.zeros(1, requires_grad=True)
total = 0
for t in range(15):
    loss = ((w - 3) ** 2).sum() + model(torch.ones(2)).sum() * 0
    total = total + loss
    loss.backward()
    with torch.no_grad():
        w -= 0.1 * w.grad
        w.grad = None
print(round(w.item(), 4))
"""
    trace = record(source)
    assert trace.events[-1].type == "run_finished" and trace.events[-1].status == "ok"
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(source, "plain.py", "exec"), {"__name__": "__main__"})
    assert "".join(e.text for e in trace.events if e.type == "output") == printed.getvalue()
    assert any(e.type == "tensor_final" and e.name == "model.weight" for e in trace.events)


def test_record_refuses_an_output_it_cannot_write_before_running_the_snippet(tmp_path: Path) -> None:
    # `-o missing/dir/t.json` ran the snippet, then died in a traceback writing the trace
    marker = tmp_path / "ran"
    snippet = tmp_path / "s.py"
    snippet.write_text(f"open({str(marker)!r}, 'w').close()\n")
    for out, why in [
        (tmp_path / "missing" / "t.json", f"there is no folder {tmp_path / 'missing'}"),
        (tmp_path, "it is a folder"),
    ]:
        result = gradwalk_cli("record", str(snippet), "-o", str(out))
        assert result.returncode == 2, result
        assert result.stderr.strip() == f"gradwalk record: cannot write {out}: {why}", result.stderr
        assert not marker.exists()
    assert gradwalk_cli("record", str(snippet), "-o", str(tmp_path / "t.json")).returncode == 0
    assert marker.exists() and (tmp_path / "t.json").is_file()


def test_record_refuses_a_device_it_cannot_use(tmp_path: Path) -> None:
    # --device banana ran the snippet into PyTorch's "Expected one of cpu, cuda, ipu, ..."
    snippet = tmp_path / "s.py"
    snippet.write_text("import torch\nx = torch.ones(2, device=device)\nprint(x.device)\n")
    out = str(tmp_path / "t.json")
    unknown = gradwalk_cli("record", str(snippet), "--device", "banana", "-o", out)
    assert (
        unknown.returncode == 2
        and "argument --device: expected cpu, cuda or cuda:N: 'banana'" in unknown.stderr
    )
    cuda = gradwalk_cli("record", str(snippet), "--device", "cuda", "-o", out)
    if torch.cuda.is_available():  # a GPU machine records on it (tests/engine/test_cuda.py)
        assert cuda.returncode == 0, cuda
    else:
        assert cuda.returncode == 2 and cuda.stderr.strip() == (
            "gradwalk record: --device cuda: CUDA is not available here (no GPU was found); record on cpu"
        ), cuda.stderr
