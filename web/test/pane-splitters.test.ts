// The columns of the workspace when the user has dragged its dividers, and the widths a
// page reads back from storage (anything unreadable is the default layout).
import assert from "node:assert/strict";
import { test } from "node:test";
import { PANE_MIN, paneColumns, parseWidths } from "../src/pane-splitters";

test("no width chosen: the default shares, the same as the stylesheet's", () => {
  assert.deepEqual(paneColumns({ code: null, side: null }), {
    graph: "minmax(300px, 29fr) minmax(360px, 42fr) minmax(320px, 29fr)",
    charts: "minmax(300px, 29fr) minmax(360px, 71fr)",
  });
});

test("a chosen width is the column's largest, down to its minimum; the graph takes the rest", () => {
  assert.deepEqual(paneColumns({ code: 250, side: 500 }), {
    graph: "minmax(220px, 250px) minmax(320px, 42fr) minmax(280px, 500px)",
    charts: "minmax(220px, 250px) minmax(360px, 71fr)",
  });
  assert.equal(paneColumns({ code: null, side: 400 }).graph, "minmax(300px, 29fr) minmax(320px, 42fr) minmax(280px, 400px)");
});

test("saved widths are read back; anything else is the default", () => {
  assert.deepEqual(parseWidths('{"code": 260.4, "side": 380}'), { code: 260, side: 380 });
  assert.deepEqual(parseWidths('{"code": 260}'), { code: 260, side: null });
  const none = { code: null, side: null };
  for (const text of [null, "", "not json", "[]", "null", "7", '{"code": "260"}', '{"code": 1e9}', '{"side": -5}']) {
    assert.deepEqual(parseWidths(text), none, String(text));
  }
  // narrower than a pane can be made: not a width this page would have saved
  assert.deepEqual(parseWidths(JSON.stringify({ code: PANE_MIN.code - 1, side: PANE_MIN.side })), { code: null, side: PANE_MIN.side });
});
