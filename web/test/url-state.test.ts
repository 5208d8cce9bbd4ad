// The address bar and the embed code carry the charts' choices: yscale, norms and the
// compared run, left out at their defaults, unknown values ignored.
import assert from "node:assert/strict";
import { test } from "node:test";
import { readChartChoices, readUrl, writeChartChoices } from "../src/url-state";

test("a link's y scale and norms are read; unknown or absent ones are null", () => {
  assert.deepEqual(readChartChoices(new URLSearchParams("yscale=log&norms=per-parameter")), { yscale: "log", perParam: true, compare: null });
  assert.deepEqual(readChartChoices(new URLSearchParams("yscale=linear&norms=together")), { yscale: "linear", perParam: false, compare: null });
  assert.deepEqual(readChartChoices(new URLSearchParams("yscale=cubic&norms=yes")), { yscale: null, perParam: null, compare: null });
  assert.deepEqual(readChartChoices(new URLSearchParams("")), { yscale: null, perParam: null, compare: null });
  const url = readUrl("?run=abc&view=charts&yscale=auto");
  assert.equal(url.view, "charts");
  assert.equal(url.yscale, "auto");
  assert.equal(url.perParam, null);
});

test("only choices other than the defaults are written, and they read back", () => {
  const q = new URLSearchParams();
  writeChartChoices(q, { yscale: "auto", perParam: false, compare: null });
  assert.equal(q.toString(), "");
  writeChartChoices(q, { yscale: "log", perParam: true, compare: "b5019c0c2c5e" });
  assert.equal(q.toString(), "yscale=log&norms=per-parameter&compare=b5019c0c2c5e");
  assert.deepEqual(readChartChoices(q), { yscale: "log", perParam: true, compare: "b5019c0c2c5e" });
  // comparing with nothing again takes the run out of the link
  writeChartChoices(q, { yscale: "log", perParam: true, compare: null });
  assert.equal(q.toString(), "yscale=log&norms=per-parameter");
});

test("a compared run is a run id; anything else compares with nothing", () => {
  assert.equal(readUrl("?run=abc&compare=f53007e0aca1").compare, "f53007e0aca1");
  assert.equal(readUrl("?run=abc").compare, null);
  for (const bad of ["", "../api/runs", "a b", "x".repeat(65), "<script>"]) {
    assert.equal(readChartChoices(new URLSearchParams({ compare: bad })).compare, null, bad);
  }
});
