"""``GET /api/runs`` holds what the web app's **Recent runs** list shows (hunt 65): each run's
title, and for a run with no title its first line of code (``first_line``; the list had only
the title, and ``import torch`` would have named almost every untitled run)."""

from __future__ import annotations

import httpx

from server.library import first_code_line
from tests.server.harness import run_json
from tests.server.test_api import wait_finished

UNTITLED = "import torch\nfrom torch import nn\n\n\nw = torch.ones(3, requires_grad=True)\n(w * 2).sum().backward()\n"
TITLED = "# Recent runs: a titled one\nimport torch\nx = torch.tensor(2.0, requires_grad=True)\n(x**2).backward()\n"


def test_first_code_line_skips_comments_blank_lines_and_imports() -> None:
    assert first_code_line(UNTITLED) == "w = torch.ones(3, requires_grad=True)"
    assert first_code_line("# only words\n\nimport torch\n") == "import torch"
    assert first_code_line("# nothing but a comment\n\n") == ""
    assert first_code_line("    x = 1   \n") == "x = 1"
    long = "y = [" + ", ".join(["1"] * 60) + "]"
    cut = first_code_line(long)
    assert len(cut) == 80 and cut.endswith("…") and long.startswith(cut[:-1])


def test_the_list_names_each_run_by_its_title_or_first_line(api: httpx.Client) -> None:
    untitled = api.post("/api/runs", json={"source": UNTITLED})
    titled = api.post("/api/runs", json={"source": TITLED})
    assert untitled.status_code == titled.status_code == 201, (untitled.text, titled.text)
    # listed at once, while they may still be queued or running, and again once finished
    listed = {r["id"]: r for r in run_json(api.get("/api/runs", params={"limit": 10}))["runs"]}
    assert listed[untitled.json()["id"]]["first_line"] == "w = torch.ones(3, requires_grad=True)"
    for run in (untitled.json(), titled.json()):
        wait_finished(api, run["id"])
    runs = run_json(api.get("/api/runs", params={"limit": 10}))["runs"]
    by_id = {r["id"]: r for r in runs}
    first, second = by_id[untitled.json()["id"]], by_id[titled.json()["id"]]
    assert first["title"] is None and first["first_line"] == "w = torch.ones(3, requires_grad=True)"
    assert second["title"] == "Recent runs: a titled one"
    assert second["first_line"] == "x = torch.tensor(2.0, requires_grad=True)"
    # newest first, without sources, with the status and counts the list shows
    ids = [r["id"] for r in runs]
    assert ids.index(titled.json()["id"]) < ids.index(untitled.json()["id"])
    assert "source" not in second and second["status"] == "ok" and second["counts"]["backward_calls"] == 1
    # one run read alone carries it too
    assert run_json(api.get(f"/api/runs/{titled.json()['id']}"))["first_line"] == second["first_line"]
