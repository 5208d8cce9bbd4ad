// The recent runs list's words (web/src/recent-runs.ts): when a run was made, its counts and
// its status, as the list shows them.
import assert from "node:assert/strict";
import { test } from "node:test";
import { countsText, statusWord, whenMade } from "../src/recent-runs";

test("when a run was made reads as a list reads it, in local time", () => {
  const now = new Date(2026, 2, 12, 14, 30); // Thursday 12 March 2026, 14:30
  const at = (d: number, h: number, m: number) => new Date(2026, 2, d, h, m);
  assert.equal(whenMade(at(12, 14, 30), now), "just now");
  assert.equal(whenMade(new Date(now.getTime() + 30_000), now), "just now"); // a clock a little ahead
  assert.equal(whenMade(at(12, 14, 25), now), "5 min ago");
  assert.equal(whenMade(at(12, 13, 31), now), "59 min ago");
  assert.equal(whenMade(at(12, 9, 5), now), "today 09:05");
  assert.equal(whenMade(at(11, 14, 2), now), "yesterday 14:02");
  assert.equal(whenMade(at(11, 23, 59), new Date(2026, 2, 12, 0, 30)), "31 min ago");
  assert.equal(whenMade(at(9, 8, 0), now), "Mon 08:00");
  assert.equal(whenMade(at(3, 14, 2), now), "3 Mar 14:02");
  assert.equal(whenMade(new Date(2025, 11, 24, 10, 0), now), "24 Dec 2025");
});

test("a run's counts and status in a few words", () => {
  assert.equal(countsText(null), "");
  assert.equal(countsText({ ops: 1, nodes: 0, backward_calls: 1, optimizer_steps: 0 }), "1 op · 0 nodes");
  assert.equal(countsText({ ops: 2000, nodes: 28, backward_calls: 20, optimizer_steps: 20 }), "2,000 ops · 28 nodes · 20 backward calls · 20 optimizer steps");
  assert.equal(statusWord("ok"), "finished");
  assert.equal(statusWord("cancelled"), "stopped");
  assert.equal(statusWord("running"), "running");
  assert.equal(statusWord("something new"), "something new");
});
