// The address bar and the embed code carry the charts' choices: yscale, norms, the
// compared run and the hidden charts, left out at their defaults, unknown values ignored.
import assert from "node:assert/strict";
import { test } from "node:test";
import { canHide, parseHide, readCall, readChartChoices, readUrl, writeCall, writeChartChoices } from "../src/url-state";

test("a link's y scale and norms are read; unknown or absent ones are null", () => {
  assert.deepEqual(readChartChoices(new URLSearchParams("yscale=log&norms=per-parameter")), { yscale: "log", perParam: true, compare: null, hide: null });
  assert.deepEqual(readChartChoices(new URLSearchParams("yscale=linear&norms=together")), { yscale: "linear", perParam: false, compare: null, hide: null });
  assert.deepEqual(readChartChoices(new URLSearchParams("yscale=cubic&norms=yes")), { yscale: null, perParam: null, compare: null, hide: null });
  assert.deepEqual(readChartChoices(new URLSearchParams("")), { yscale: null, perParam: null, compare: null, hide: null });
  const url = readUrl("?run=abc&view=charts&yscale=auto");
  assert.equal(url.view, "charts");
  assert.equal(url.yscale, "auto");
  assert.equal(url.perParam, null);
});

test("only choices other than the defaults are written, and they read back", () => {
  const q = new URLSearchParams();
  writeChartChoices(q, { yscale: "auto", perParam: false, compare: null, hide: [] });
  assert.equal(q.toString(), "");
  writeChartChoices(q, { yscale: "log", perParam: true, compare: "b5019c0c2c5e", hide: ["lr", "metric:val_acc"] });
  assert.equal(q.toString(), "yscale=log&norms=per-parameter&compare=b5019c0c2c5e&hide=lr%2Cmetric%3Aval_acc");
  assert.deepEqual(readChartChoices(q), { yscale: "log", perParam: true, compare: "b5019c0c2c5e", hide: ["lr", "metric:val_acc"] });
  // a comma or a percent sign in a metric's name survives the link
  const odd = ["metric:top-1, top-5", "metric:acc (%)", "metric:50%2C"];
  const link = new URLSearchParams();
  writeChartChoices(link, { yscale: "auto", perParam: false, compare: null, hide: odd });
  assert.equal(link.get("hide"), "metric:top-1%2C top-5,metric:acc (%25),metric:50%252C");
  assert.deepEqual(readChartChoices(new URLSearchParams(link.toString())).hide, odd);
  // comparing with nothing and hiding nothing again take them out of the link
  writeChartChoices(q, { yscale: "log", perParam: true, compare: null, hide: [] });
  assert.equal(q.toString(), "yscale=log&norms=per-parameter");
});

test("a compared run is a run id; anything else compares with nothing", () => {
  assert.equal(readUrl("?run=abc&compare=f53007e0aca1").compare, "f53007e0aca1");
  assert.equal(readUrl("?run=abc").compare, null);
  for (const bad of ["", "../api/runs", "a b", "x".repeat(65), "<script>"]) {
    assert.equal(readChartChoices(new URLSearchParams({ compare: bad })).compare, null, bad);
  }
});

test("hidden charts are chart ids, each once; what cannot be one is left out", () => {
  assert.deepEqual(parseHide("grad,update, lr ,grad"), ["grad", "update", "lr"]);
  assert.deepEqual(parseHide("grad\n,lr"), ["lr"]);
  assert.deepEqual(parseHide("metric:val/acc,metric:top 1"), ["metric:val/acc", "metric:top 1"]);
  assert.deepEqual(parseHide(""), []);
  // a metric's name may hold any character but a comma or a control character
  assert.deepEqual(parseHide("metric:acc (%),metric:Genauigkeit ü,metric:<b>"), ["metric:acc (%)", "metric:Genauigkeit ü", "metric:<b>"]);
  assert.deepEqual(parseHide("metric:a\tb,x".concat("y".repeat(128), ",loss")), ["loss"]);
  assert.equal(parseHide(Array.from({ length: 40 }, (_, i) => `metric:m${i}`).join(",")).length, 32);
  assert.equal(readUrl("?run=abc").hide, null);
  assert.deepEqual(readUrl("?run=abc&hide=").hide, []);
  // a chart a link cannot name is not offered for hiding (its × would not survive a reload)
  assert.equal(canHide("metric:val_acc"), true);
  assert.equal(canHide("metric:acc (%)"), true);
  assert.equal(canHide("metric:acc, top-1"), true); // written metric:acc%2C top-1
  assert.equal(canHide(`metric:${",".repeat(41)}`), false); // 130 characters written out
  assert.equal(canHide("metric:a\nb"), false);
  assert.equal(canHide(`metric:${"n".repeat(100)}`), true); // the longest name a metric keeps
});

test("the graph's backward call travels as call=N, counted from 1 as the app numbers calls, or call=all", () => {
  assert.equal(readUrl("?run=abc&call=3").call, 2);
  assert.equal(readUrl("?run=abc&call=all").call, "all");
  // none, or anything else: the run's default
  for (const bad of ["call=0", "call=-1", "call=two", "call=ALL", "call=", ""]) assert.equal(readUrl(`?run=abc&${bad}`).call, null, bad);
  const q = new URLSearchParams();
  writeCall(q, null);
  assert.equal(q.toString(), "");
  writeCall(q, 2);
  assert.equal(q.toString(), "call=3");
  assert.equal(readCall(q), 2);
  writeCall(q, "all");
  assert.equal(q.toString(), "call=all");
  assert.equal(readCall(q), "all");
});
