"""Fidelity hunt 61: some 100 snippets of autograd's corners (higher-order grads, custom
Functions, hooks, torch.func, complex and sparse tensors, views, grad modes, checkpointing,
recurrent and attention layers, threads, exits) recorded and run plain. Every gradient matched
PyTorch's; these differences did not, each fixed:

- an exception whose ``__str__`` raises took the recorder down (no trace at all), where Python
  prints ``Weird: <exception str() failed>``;
- a custom Function that returns its input (a straight-through estimator) put PyTorch's "The
  .grad attribute of a Tensor that is not a leaf" warning on the snippet's stderr: gradwalk
  met the output as a leaf (PyTorch's own ``view_as`` of the input) and read its ``.grad``
  after it got its grad_fn;
- ``faulthandler.enable()`` failed (the captured stderr had no ``fileno``);
- leaves held in containers in containers (``[[a], [b]]``, ``{"enc": [a]}``) were named after
  the loop that met them (both ``p``: the final grads kept one) or not at all;
- anomaly mode's forward traceback, which PyTorch prints itself where a filter turns warnings
  into errors, listed gradwalk's frames (``engine/run.py``, ``engine/tape.py``);
- ``gradwalk record`` read a file with a UTF-8 BOM or a coding cookie otherwise than Python
  does (a SyntaxError, a UnicodeDecodeError traceback), and a snippet's ``os.chdir()`` moved
  the trace file it wrote.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings
from pathlib import Path

from engine import queries as q
from engine import record
from tests.engine.snippets import assert_as_plain, run_plain

ROOT = Path(__file__).resolve().parents[2]


def test_an_exception_that_cannot_say_what_it_is_is_recorded_as_python_shows_it() -> None:
    source = 'class Weird(Exception):\n    def __str__(self):\n        raise RuntimeError("no str")\n\n\nraise Weird()\n'
    trace = record(source)  # it raised RuntimeError out of record() itself
    (error,) = q.errors(trace)
    assert (error.exc_type, error.message, error.line) == ("Weird", "<exception str() failed>", 6)
    assert error.traceback.endswith("Weird: <exception str() failed>\n")  # as Python prints it
    finished = trace.events[-1]
    assert finished.status == "error" and finished.message == "Weird: <exception str() failed>"


STE = """import torch
class STE(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x
    @staticmethod
    def backward(ctx, g):
        return g
w = torch.tensor([0.3, -0.7], requires_grad=True)
q = STE.apply(w)
loss = (q * torch.tensor([1.0, 2.0])).sum()
loss.backward()
print(w.grad)
"""


def test_a_custom_function_that_returns_its_input_adds_no_warning() -> None:
    with warnings.catch_warnings(record=True) as plain:
        warnings.simplefilter("always")
        run_plain(STE)
    assert plain == []
    trace = assert_as_plain(STE, leaves=("w",))
    assert [e.text for e in trace.events if e.type == "output" and e.stream == "stderr"] == []


def test_faulthandler_can_be_enabled() -> None:
    source = "import faulthandler\nfaulthandler.enable()\nprint(faulthandler.is_enabled())\nfaulthandler.disable()\n"
    trace = record(source)
    assert trace.events[-1].status == "ok" and q.stdout(trace) == "True\n"  # "UnsupportedOperation: fileno"


def test_leaves_in_containers_in_containers_are_named_by_their_place_each_with_its_grad() -> None:
    source = """import torch
params = [[torch.tensor(1.0, requires_grad=True)], [torch.tensor(2.0, requires_grad=True)]]
sum(p * p for row in params for p in row).backward()
cfg = {"enc": [torch.tensor(3.0, requires_grad=True)], "dec": (torch.tensor(4.0, requires_grad=True),)}
(cfg["enc"][0] * cfg["dec"][0]).backward()
"""
    _, _, scope = run_plain(source)
    plain = {
        "params[0][0]": scope["params"][0][0].grad,
        "params[1][0]": scope["params"][1][0].grad,
        "cfg['enc'][0]": scope["cfg"]["enc"][0].grad,
        "cfg['dec'][0]": scope["cfg"]["dec"][0].grad,
    }
    # both were "p" (one grad kept), the two in cfg unnamed (no final grad)
    assert q.final_grads(record(source)) == {name: grad.item() for name, grad in plain.items()}
    assert [v.item() for v in plain.values()] == [2.0, 4.0, 4.0, 3.0]


def test_anomaly_mode_s_forward_trace_printed_under_warnings_as_errors_holds_only_the_snippet_s_frames() -> (
    None
):
    source = """import warnings
import torch
warnings.simplefilter("error")
torch.autograd.set_detect_anomaly(True)
x = torch.tensor([0.0, 1.0], requires_grad=True)
(x.sqrt() * x.log()).sum().backward()
"""
    trace = record(source)
    stderr = "".join(e.text for e in trace.events if e.type == "output" and e.stream == "stderr")
    # PyTorch prints it itself there, past the warnings hook: it listed engine/run.py and tape.py
    assert (
        'Traceback of forward call that caused the error:\n  File "snippet.py", line 6, in <module>\n'
        in stderr
    )
    assert "engine" not in stderr and "gradwalk-snippet" not in stderr
    assert q.errors(trace)[0].message == "Function 'LogBackward0' returned nan values in its 0th output."


def _record_in(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``gradwalk record ARGS`` run from ``folder``."""
    argv = [sys.executable, "-m", "gradwalk.cli", "record", *args]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(argv, cwd=folder, capture_output=True, text=True, timeout=120, env=env)


def test_the_cli_reads_a_file_as_python_does(tmp_path: Path) -> None:
    (tmp_path / "bom.py").write_bytes(b'\xef\xbb\xbfprint("bom")\n')
    (tmp_path / "latin.py").write_bytes(b'# -*- coding: latin-1 -*-\nprint("caf\xe9")\n')
    (tmp_path / "ascii.py").write_bytes(b'# -*- coding: ascii -*-\ns = "caf\xe9"\n')
    for name, printed in [("bom", "bom\n"), ("latin", "café\n")]:
        done = _record_in(tmp_path, f"{name}.py", "-o", f"{name}.json")
        assert done.returncode == 0, (name, done.stdout, done.stderr)  # a SyntaxError, a traceback
        trace = json.loads((tmp_path / f"{name}.json").read_text())
        assert "".join(e["text"] for e in trace["events"] if e["type"] == "output") == printed, name
    done = _record_in(tmp_path, "ascii.py", "-o", "ascii.json")
    assert done.returncode == 2 and done.stderr.startswith(
        "gradwalk record: cannot read ascii.py: 'ascii' codec"
    )
    assert "Traceback" not in done.stderr


def test_a_snippet_that_changes_folder_leaves_its_trace_where_the_cli_was_asked_to_write_it(
    tmp_path: Path,
) -> None:
    (tmp_path / "away.py").write_text('import os\nos.makedirs("elsewhere")\nos.chdir("elsewhere")\n')
    done = _record_in(tmp_path, "away.py", "-o", "t.json")
    assert done.returncode == 0, done.stderr
    assert "trace written to t.json" in done.stdout
    # it was written to elsewhere/t.json, the summary still saying t.json
    assert (tmp_path / "t.json").is_file() and not (tmp_path / "elsewhere" / "t.json").exists()
