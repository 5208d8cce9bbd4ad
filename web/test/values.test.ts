// Formatting values as they travel in events.
import assert from "node:assert/strict";
import { test } from "node:test";
import type { FullValue, SummaryValue } from "../src/types/events";
import { fmtAddend, fmtValue, fmtValueRows, shapesText, stats } from "../src/values";

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

test("a small matrix is written in the brackets of its shape, as PyTorch prints it", () => {
  // `W.grad: 0 + [2, 4, 6, 8]` read as a vector where PyTorch prints [[2, 4], [6, 8]]
  const full = (flat: number[], shape: number[]): FullValue => ({ kind: "full", flat, shape });
  assert.equal(fmtValue(full([2, 4, 6, 8], [2, 2])), "[[2, 4], [6, 8]]");
  assert.equal(fmtValue(full([1, 2, 3, 4, 5, 6], [3, 2])), "[[1, 2], [3, 4], [5, 6]]");
  assert.equal(fmtValue(full([1, 2, 3, 4], [2, 1, 2])), "[[[1, 2]], [[3, 4]]]");
  assert.equal(fmtValue(full([1, 2, 3], [3])), "[1, 2, 3]");
  assert.equal(fmtValue(full([7], [1, 1])), "7");
});

test("the stepper's table writes a matrix a row a line, as print(t) lays it out", () => {
  const full = (flat: number[], shape: number[]): FullValue => ({ kind: "full", flat, shape });
  assert.equal(fmtValueRows(full([2, 4, 6, 8], [2, 2])), "[[2, 4],\n [6, 8]]");
  assert.equal(fmtValueRows(full([1, 2, 3, 4, 5, 6, 7, 8], [2, 2, 2]), 8), "[[[1, 2],\n  [3, 4]],\n [[5, 6],\n  [7, 8]]]");
  // a vector, one number, or more numbers than shown whole: as fmtValue writes them
  assert.equal(fmtValueRows(full([1, 2, 3], [3])), "[1, 2, 3]");
  assert.equal(fmtValueRows(full([7], [1, 1])), "7");
  assert.equal(fmtValueRows(full([1, 2, 3, 4, 5, 6, 7, 8], [2, 4])), fmtValue(full([1, 2, 3, 4, 5, 6, 7, 8], [2, 4])));
});

test("a negative number after a + is bracketed; anything else reads as fmtValue writes it", () => {
  // `b.grad: 0 + −0.75 → −0.75` read as a typo beside the paths' `−4 + 18.75`
  const full = (flat: number[], shape: number[]): FullValue => ({ kind: "full", flat, shape });
  assert.equal(fmtAddend(full([-0.75], [])), "(−0.75)");
  assert.equal(fmtAddend(full([0.75], [])), "0.75");
  assert.equal(fmtAddend(full([-1, 2], [2])), "[−1, 2]");
  assert.equal(fmtAddend(null), "—");
});

test("an op's outputs' shapes: one, alike, two, or a count", () => {
  assert.equal(shapesText([]), "");
  assert.equal(shapesText([[2, 3]]), "[2×3]");
  assert.equal(shapesText([[]]), "scalar");
  assert.equal(shapesText([[2, 4], [2, 4], [2, 4]]), "3 × [2×4]");
  assert.equal(shapesText([[4], [4]]), "2 × [4]");
  assert.equal(shapesText([[4, 3], [4]]), "[4×3], [4]");
  assert.equal(shapesText([[4, 3], [4], [3], [3], []]), "5 tensors");
  assert.equal(shapesText([[4], undefined]), "[4], ?");
});

test("a whole value's std is PyTorch's Tensor.std() (n − 1), as a summary's is", () => {
  // torch.tensor([1., 2., 3., 4.]).std() = 1.2910; divided by n it read 1.1180
  const full: FullValue = { kind: "full", flat: [1, 2, 3, 4], shape: [4] };
  assert.equal(stats(full)?.std?.toFixed(4), "1.2910");
  assert.equal(stats({ kind: "full", flat: [5], shape: [1] })?.std, 0);
});
