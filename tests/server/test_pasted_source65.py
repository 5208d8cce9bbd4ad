"""Source POSTed to ``/api/runs`` read as Python reads a script file (hunt 65): a leading UTF-8
BOM dropped (the run failed "invalid non-printable character U+FEFF"), ``\\r\\n`` and a lone
``\\r`` made ``\\n``, so that the source stored is the one that ran and the one every view
(the embed's Code tab splits at ``\\n``) shows."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import httpx

from engine.events import Trace, trace_adapter
from tests.server.test_api import wait_finished

CUBIC = "import torch\nx = torch.tensor(2.0, requires_grad=True)\n(x**3).backward()\nprint(x.grad)\n"
MISSPELT = "x = 1\ny = 2\nz = x + oops\n"


def _ran(api: httpx.Client, source: str) -> tuple[dict[str, object], Trace]:
    """POST ``source`` as a run; the run once finished and its trace."""
    created = api.post("/api/runs", json={"source": source})
    assert created.status_code == 201, created.text
    run = wait_finished(api, created.json()["id"])
    return run, trace_adapter.validate_json(api.get(f"/api/runs/{run['id']}/trace").content)


def _printed(trace: Trace) -> str:
    return "".join(e.text for e in trace.events if e.type == "output")


def _plain_traceback(tmp_path: Path, source: str) -> str:
    """``python snippet.py``'s traceback of ``source`` written as it is, named as gradwalk names it."""
    script = tmp_path / "snippet.py"
    script.write_bytes(source.encode("utf-8"))
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60)
    return done.stderr[done.stderr.index("Traceback") :].replace(str(script), "snippet.py")


def test_a_leading_byte_order_mark_runs_as_python_runs_the_file(api: httpx.Client, tmp_path: Path) -> None:
    script = tmp_path / "bom.py"
    script.write_bytes(("\ufeff" + CUBIC).encode("utf-8"))
    plain = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60)
    assert (plain.returncode, plain.stdout) == (0, "tensor(12.)\n"), plain.stderr
    run, trace = _ran(api, "\ufeff" + CUBIC)
    assert run["status"] == "ok", run["message"]
    assert _printed(trace) == plain.stdout
    assert run["source"] == trace.source == CUBIC


def test_windows_line_ends_are_stored_as_python_reads_them(api: httpx.Client, tmp_path: Path) -> None:
    pasted = MISSPELT.replace("\n", "\r\n")
    run, trace = _ran(api, pasted)
    assert run["source"] == trace.source == MISSPELT
    error = next(e for e in trace.events if e.type == "error")
    assert error.line == 3
    assert error.traceback == _plain_traceback(tmp_path, pasted)
    assert "    z = x + oops\n            ^^^^\n" in error.traceback


def test_old_mac_line_ends_are_lines_in_the_stored_source(api: httpx.Client) -> None:
    run, trace = _ran(api, "\ufeff" + CUBIC.replace("\n", "\r"))
    assert run["status"] == "ok", run["message"]
    assert run["source"] == trace.source == CUBIC
    assert run["source"].split("\n")[3] == "print(x.grad)"  # as web/src/code-view.ts splits it
    assert _printed(trace) == "tensor(12.)\n"


def test_a_bom_or_line_end_inside_the_source_is_left_as_it_is(api: httpx.Client) -> None:
    # only a leading BOM is the file's mark; one inside a string is the snippet's text
    source = 'print(len("\ufeff"), "a\\r\\nb")\n'
    run, trace = _ran(api, source)
    assert run["source"] == trace.source == source
    assert _printed(trace) == "1 a\r\nb\n"


def test_a_run_is_titled_by_its_first_comment_of_words_not_its_encoding_line_or_cell_marks(
    api: httpx.Client,
) -> None:
    # every file nbconvert writes starts so, and was titled "coding: utf-8" (hunt 65)
    nbconvert = "#!/usr/bin/env python\n# coding: utf-8\n\n# In[1]:\n\n\n# Fit a cubic\n" + CUBIC
    jupytext = "# -*- coding: utf-8 -*-\n# %%\n# -----\n# %% Train the model\n" + CUBIC
    untitled = "# coding: utf-8\n# In[ ]:\n" + CUBIC
    for source, title in [(nbconvert, "Fit a cubic"), (jupytext, "Train the model"), (untitled, None)]:
        run, _ = _ran(api, source)
        assert run["title"] == title, (source, run["title"])
