// Tab badges stay short: a 10,000-node backward walk reads "10k", not five digits that push
// the Charts tab out of the side pane.
import assert from "node:assert/strict";
import { test } from "node:test";
import { compactCount } from "../src/dom";

test("counts up to 999 are whole; past that, thousands with at most one decimal", () => {
  assert.deepEqual(
    [0, 7, 999, 1000, 1049, 1250, 9949, 9950, 10_001, 123_456].map(compactCount),
    ["0", "7", "999", "1k", "1k", "1.3k", "9.9k", "10k", "10k", "123k"],
  );
});
