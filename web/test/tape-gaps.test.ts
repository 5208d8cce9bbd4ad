// The metrics-only work between two ops of the tape, from a real recorded trace: a loop by
// hand whose calls 11-14 were counted, an optimizer loop whose steps 4-8 were metrics-only,
// each followed by code recorded in full again, and a last loop the run ended in.
import assert from "node:assert/strict";
import { test } from "node:test";
import { loadModel as model } from "./traces";

test("metrics_only_gaps: the ops after each loop carry the steps and calls recorded metrics-only before them", () => {
  const m = model("metrics_only_gaps");
  const opOnLine = (line: number) => m.ops.find((op) => op.line === line)!;
  const mid = opOnLine(8);
  const end = opOnLine(14);
  assert.deepEqual(m.gapsBefore.get(mid.index), { steps: 0, calls: 4 });
  assert.deepEqual(m.gapsBefore.get(end.index), { steps: 5, calls: 0 });
  assert.equal(m.gapsBefore.size, 2);
  // the last loop's steps (9-13 of the run: the first in full, the step after a loop,
  // then as the schedule says) are the tape's trailing gap
  const metricsOnly = m.optimizerSteps.filter((s) => !s.detail).length;
  assert.equal(m.gapAtEnd.steps, metricsOnly - 5);
  assert.ok(m.gapAtEnd.steps > 0 && m.gapAtEnd.calls === 0);
  // the counts are the trace's own: every counted call and metrics-only step is in one gap
  const counted = m.events.filter((e) => e.type === "backward_counted").length;
  const gaps = [...m.gapsBefore.values(), m.gapAtEnd];
  assert.equal(gaps.reduce((n, g) => n + g.calls, 0), counted);
  assert.equal(gaps.reduce((n, g) => n + g.steps, 0), metricsOnly);
});
