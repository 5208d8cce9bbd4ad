// The workspace's grid when the user has dragged its dividers, and the sizes a page reads
// back from storage (anything unreadable is the default layout).
import assert from "node:assert/strict";
import { test } from "node:test";
import { PANE_MIN, parseSizes, projectorGrid, wideColumns } from "../src/pane-splitters";

test("wide, no size chosen: the default shares, the same as the stylesheet's", () => {
  assert.deepEqual(wideColumns({ code: null, side: null }), {
    graph: "minmax(300px, 29fr) minmax(360px, 42fr) minmax(320px, 29fr)",
    charts: "minmax(300px, 29fr) minmax(360px, 71fr)",
  });
});

test("wide: a chosen width is the column's largest, down to its minimum; the graph takes the rest", () => {
  assert.deepEqual(wideColumns({ code: 250, side: 500 }), {
    graph: "minmax(220px, 250px) minmax(320px, 42fr) minmax(280px, 500px)",
    charts: "minmax(220px, 250px) minmax(360px, 71fr)",
  });
  assert.equal(wideColumns({ code: null, side: 400 }).graph, "minmax(300px, 29fr) minmax(320px, 42fr) minmax(280px, 400px)");
});

test("projector: the side panel's width and the code's height; unchosen ones are the stylesheet's", () => {
  assert.deepEqual(projectorGrid({ code: null, side: null }), { columns: null, rows: null });
  assert.deepEqual(projectorGrid({ code: 150, side: 300 }), {
    columns: "minmax(320px, 1fr) minmax(260px, 300px)",
    rows: "minmax(160px, 1fr) minmax(90px, 150px)",
  });
});

test("saved sizes are read back; anything else is the default", () => {
  assert.deepEqual(parseSizes('{"code": 260.4, "side": 380}', "wide"), { code: 260, side: 380 });
  assert.deepEqual(parseSizes('{"code": 260}', "wide"), { code: 260, side: null });
  const none = { code: null, side: null };
  for (const text of [null, "", "not json", "[]", "null", "7", '{"code": "260"}', '{"code": 1e9}', '{"side": -5}']) {
    assert.deepEqual(parseSizes(text, "wide"), none, String(text));
  }
  // smaller than the layout lets a pane be: not a size this page would have saved
  assert.deepEqual(parseSizes(JSON.stringify({ code: PANE_MIN.wide.code - 1, side: PANE_MIN.wide.side }), "wide"), { code: null, side: PANE_MIN.wide.side });
  assert.deepEqual(parseSizes(JSON.stringify({ code: 100 }), "projector"), { code: 100, side: null });
  assert.deepEqual(parseSizes(JSON.stringify({ code: 100 }), "wide"), none);
});
