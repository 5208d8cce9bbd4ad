// The charts' note writes the steps (or backward() calls) recorded in full as a short list.
import assert from "node:assert/strict";
import { test } from "node:test";
import { listText } from "../src/chart-steps";

test("runs of three or more read as ranges; past eight items, an ellipsis", () => {
  assert.equal(listText([1, 2, 3, 400]), "1–3, 400");
  assert.equal(listText([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]), "1–10");
  assert.equal(listText([1, 2, 50, 100]), "1, 2, 50, 100");
  assert.equal(listText([1, 2, 3, 10, 20, 30, 40, 50, 60, 70, 80]), "1–3, 10, 20, 30, 40, 50, 60, 70 …");
  assert.equal(listText([]), "");
});
