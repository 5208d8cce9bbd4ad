// Formatting values as they travel in events.
import assert from "node:assert/strict";
import { test } from "node:test";
import type { SummaryValue } from "../src/types/events";
import { fmtValue } from "../src/values";

const summary = (of: SummaryValue["of"]): SummaryValue => ({
  kind: "summary",
  shape: [2],
  numel: 2,
  min: 2.236,
  max: 6.325,
  mean: 4.28,
  std: 2.9,
  norm: 6.708,
  nan: 0,
  inf: 0,
  hist: [1, 1],
  of,
});

test("a complex tensor's summary says its statistics are of magnitudes; a real one's does not", () => {
  assert.equal(fmtValue(summary("abs")), "[2] complex ‖·‖ 6.708");
  assert.equal(fmtValue(summary("value")), "[2] ‖·‖ 6.708");
});
