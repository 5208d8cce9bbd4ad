"""Measure the browser: last event -> laid-out graph for 1k, 5k, 10k nodes, and time per step.

Run: ``python bench/bench_web.py [--sizes 1000,5000,10000] [--json]``. Starts a real
``gradwalk serve`` on a free port, opens the app in Debian's Chromium (headless, through
Playwright) and, for each size, feeds a generated trace (``tests/web/tracegen.py``: a chain
of grad_fn nodes grouped into modules, with its backward walk) into the page in batches of
500 events, as a live stream would arrive. Everything is timed in the page with the
Performance API:

* **ingest**: the trace model's cost per event (it is O(1) per event);
* **layout**: from the moment the last event was ingested to the graph laid out and
  painted (the level of detail the app picks is reported: ELK's layered layout for small
  graphs, breadth-first plus folded module groups for big ones; past 3,000 laid-out nodes
  the app draws the part nearest the output until asked for all: the ``drawn`` column);
* **step**: one stepper step (next node of the backward walk): the synchronous update of
  every view, and until the next painted frame; median over 60 steps;
* **scrub**: the tape's scrubber moved across the tape (thousands of ops greyed or
  un-greyed, the tape scrolled far, the graph replayed), until painted; median of 9 jumps;
* **drag**: the divider between the code and the graph dragged 150 px with the mouse in 30
  moves (web/src/pane-splitters.ts): the gaps between painted frames meanwhile, median and
  longest.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.serve import start_server

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

__all__ = ["main", "measure"]

CHROMIUM = os.environ.get("GRADWALK_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]

_FEED = """async ({ text, batch }) => {
  const app = window.gradwalk;
  const trace = JSON.parse(text);
  app.loadTrace({ source: trace.source, events: [] });
  const events = trace.events;
  let ingest = 0;
  let last = 0;
  for (let i = 0; i < events.length; i += batch) {
    const t = performance.now();
    app.model.ingest(events.slice(i, i + batch));
    last = performance.now();
    ingest += last - t;
    // Yield as a stream would; the graph may lay out in between (even after the last batch).
    await new Promise((r) => setTimeout(r, 0));
  }
  const deadline = last + 300000;
  while ((app.graph.busy || !app.graph.lastLayout || app.graph.lastLayout.at < last) && performance.now() < deadline) {
    await new Promise((r) => setTimeout(r, 5));
  }
  if (performance.now() >= deadline) {
    const g = app.graph;
    const state = JSON.stringify({ running: g.scheduler.running, pending: g.scheduler.pending, timer: g.scheduler.timer, last: g.lastLayout, lastEvent: last });
    throw new Error(`the graph was not laid out within 300 s of the last event: ${state}`);
  }
  await new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)));
  const painted = performance.now();
  const info = app.graph.lastLayout;
  return {
    events: events.length,
    nodes: app.model.nodes.size,
    drawn: app.graph.core.nodes().length,
    layout: info.layout,
    folded: app.graph.core.nodes('[kind = "collapsed"]').length,
    ingest_us_per_event: (ingest * 1000) / events.length,
    layout_ms: painted - last,
  };
}"""

_STEP = """async ({ steps }) => {
  const app = window.gradwalk;
  app.openView("stepper");
  app.stepper.go(0);
  await new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)));
  const sync = [], frame = [];
  for (let i = 1; i <= steps; i++) {
    const t0 = performance.now();
    app.stepper.go(i);
    sync.push(performance.now() - t0);
    await new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)));
    frame.push(performance.now() - t0);
  }
  const median = (xs) => xs.slice().sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  return { step_sync_ms: median(sync), step_frame_ms: median(frame) };
}"""


_SCRUB = """async ({ jumps }) => {
  const app = window.gradwalk;
  app.openView("tape");
  const n = app.model.ops.length;
  await new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)));
  const frame = [];
  for (let i = 0; i < jumps; i++) {
    // across the tape and back: every jump re-greys thousands of rows and scrolls far
    const op = Math.floor(((i % 2 ? 0.2 : 0.8) + (i / jumps) * 0.1) * n);
    const t0 = performance.now();
    app.store.set({ op });
    await new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)));
    frame.push(performance.now() - t0);
  }
  app.store.set({ op: null });
  const median = (xs) => xs.slice().sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  return { ops: n, scrub_frame_ms: median(frame) };
}"""


def _start_server(db: Path) -> tuple[subprocess.Popen[bytes], str]:
    return start_server(db)


def _ensure_bundle() -> None:
    app_js = ROOT / "server" / "static" / "dist" / "app.js"
    if app_js.exists():
        return
    if not shutil.which("npm"):
        raise RuntimeError("the web bundle is not built and npm is missing: run `make web`")
    subprocess.run(["npm", "run", "--silent", "build"], cwd=ROOT / "web", check=True)


_FRAMES = """() => {
  window.__benchFrames = [];
  let last = performance.now();
  const tick = (t) => {
    if (window.__benchFrames === null) return;
    window.__benchFrames.push(t - last);
    last = t;
    requestAnimationFrame(tick);
  };
  requestAnimationFrame(tick);
}"""

_FRAMES_DONE = """() => {
  const gaps = window.__benchFrames.slice(1).sort((a, b) => a - b);
  window.__benchFrames = null;
  return { drag_frame_ms: gaps[Math.floor(gaps.length / 2)], drag_frame_max_ms: gaps[gaps.length - 1] };
}"""


def _drag_divider(page: Any) -> dict[str, float]:
    """Drag the code/graph divider 150 px left in 30 mouse moves; the frame gaps meanwhile."""
    box = page.locator("[data-gw=divider-code]").bounding_box()
    x, y = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
    page.evaluate(_FRAMES)
    page.mouse.move(x, y)
    page.mouse.down()
    for i in range(1, 31):
        page.mouse.move(x - 5 * i, y)
    page.mouse.up()
    page.wait_for_timeout(300)
    figures: dict[str, float] = page.evaluate(_FRAMES_DONE)
    page.dblclick("[data-gw=divider-code]")  # the default widths again, for the next size
    return figures


def measure(sizes: list[int], per_module: int = 50, flat: bool = True) -> list[dict[str, Any]]:
    """Return one row of figures per graph size, with module groups and (``flat``) without."""
    from playwright.sync_api import sync_playwright

    from tests.web.tracegen import chain_trace

    _ensure_bundle()
    traces = {}
    for n in sizes:
        traces[(n, True)] = json.dumps(chain_trace(n, per_module=per_module))
        if flat:
            traces[(n, False)] = json.dumps(chain_trace(n))
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        proc, url = _start_server(Path(tmp) / "bench.sqlite3")
        try:
            with sync_playwright() as pw:
                browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
                page = browser.new_page(viewport={"width": 1440, "height": 900})
                page.set_default_timeout(600_000)
                page.on(
                    "console",
                    lambda m: (
                        print(f"  page {m.type}: {m.text}", file=sys.stderr) if m.type == "error" else None
                    ),
                )
                page.on("pageerror", lambda e: print(f"  page error: {e}", file=sys.stderr))
                page.goto(url + "/")
                page.wait_for_function("() => window.gradwalk && window.gradwalk.graph")
                for (n, modules), text in traces.items():
                    row: dict[str, Any] = {"size": n, "modules": modules}
                    row.update(page.evaluate(_FEED, {"text": text, "batch": 500}))
                    row.update(page.evaluate(_STEP, {"steps": 60}))
                    row.update(page.evaluate(_SCRUB, {"jumps": 9}))
                    row.update(_drag_divider(page))
                    rows.append(row)
                    print(
                        f"  measured {n} nodes ({'modules' if modules else 'flat'})",
                        file=sys.stderr,
                        flush=True,
                    )
                browser.close()
        finally:
            proc.terminate()
            proc.wait(timeout=20)
    return rows


def main(argv: list[str] | None = None) -> int:
    """Print the browser figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,5000,10000", help="graph sizes (grad_fn nodes)")
    parser.add_argument("--per-module", type=int, default=50, help="nodes per module group")
    parser.add_argument("--no-flat", action="store_true", help="skip the graphs without module groups")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args(argv)
    if not Path(CHROMIUM).exists():
        print(f"bench_web: no Chromium at {CHROMIUM} (set GRADWALK_CHROMIUM)", file=sys.stderr)
        return 2
    started = time.perf_counter()
    rows = measure([int(s) for s in args.sizes.split(",")], args.per_module, flat=not args.no_flat)
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    print(
        f"browser: generated chain traces fed in batches of 500 events; 'modules': {args.per_module} nodes per module"
    )
    print(
        f"{'nodes':>6} {'groups':>8} {'events':>7} {'drawn':>6} {'layout':>12} {'ingest/event':>13}"
        f" {'last event -> laid out':>23} {'step (sync)':>12} {'step (painted)':>15} {'scrub (painted)':>16}"
        f" {'drag frames (median/longest)':>29}"
    )
    for r in rows:
        print(
            f"{r['size']:>6} {'modules' if r['modules'] else 'flat':>8} {r['events']:>7} {r['drawn']:>6} {r['layout']:>12}"
            f" {r['ingest_us_per_event']:>10.1f} us {r['layout_ms']:>20.0f} ms {r['step_sync_ms']:>9.2f} ms"
            f" {r['step_frame_ms']:>12.1f} ms {r['scrub_frame_ms']:>13.0f} ms"
            f" {r['drag_frame_ms']:>17.0f} / {r['drag_frame_max_ms']:.0f} ms"
        )
    print(
        "(median step over 60 steps; scrub: the tape's scrubber moved across the tape, "
        "median of 9 jumps; drag: the code/graph divider dragged 150 px in 30 moves; "
        f"{time.perf_counter() - started:.0f} s in all)"
    )
    return 0 if statistics.fmean(r["layout_ms"] for r in rows) > 0 else 1


if __name__ == "__main__":
    sys.exit(main())
