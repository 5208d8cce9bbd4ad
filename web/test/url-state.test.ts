// The address bar and the embed code carry the charts' choices: yscale and norms, left out
// at their defaults, unknown values ignored.
import assert from "node:assert/strict";
import { test } from "node:test";
import { readChartChoices, readUrl, writeChartChoices } from "../src/url-state";

test("a link's y scale and norms are read; unknown or absent ones are null", () => {
  assert.deepEqual(readChartChoices(new URLSearchParams("yscale=log&norms=per-parameter")), { yscale: "log", perParam: true });
  assert.deepEqual(readChartChoices(new URLSearchParams("yscale=linear&norms=together")), { yscale: "linear", perParam: false });
  assert.deepEqual(readChartChoices(new URLSearchParams("yscale=cubic&norms=yes")), { yscale: null, perParam: null });
  assert.deepEqual(readChartChoices(new URLSearchParams("")), { yscale: null, perParam: null });
  const url = readUrl("?run=abc&view=charts&yscale=auto");
  assert.equal(url.view, "charts");
  assert.equal(url.yscale, "auto");
  assert.equal(url.perParam, null);
});

test("only choices other than the defaults are written, and they read back", () => {
  const q = new URLSearchParams();
  writeChartChoices(q, { yscale: "auto", perParam: false });
  assert.equal(q.toString(), "");
  writeChartChoices(q, { yscale: "log", perParam: true });
  assert.equal(q.toString(), "yscale=log&norms=per-parameter");
  assert.deepEqual(readChartChoices(q), { yscale: "log", perParam: true });
});
