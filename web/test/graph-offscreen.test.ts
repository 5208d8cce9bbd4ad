// The cues at the graph pane's edges (src/graph-offscreen.ts): what they count, how far they pan.
import assert from "node:assert/strict";
import { test } from "node:test";
import { countBeyond, panToward, type Viewport } from "../src/graph-offscreen";

/** Node centres at these (x, y) places, in the graph's own coordinates. */
const at = (...points: [number, number][]) => Float64Array.from(points.flat());
const view = (zoom = 1, x = 0, y = 0): Viewport => ({ zoom, pan: { x, y }, width: 400, height: 300 });

test("counts the nodes whose centres lie past each edge, a corner's on both sides", () => {
  const centres = at([200, 150], [450, 150], [500, 400], [-10, 100], [100, -5]);
  assert.deepEqual(countBeyond(centres, view()), { left: 1, right: 2, up: 1, down: 1 });
  // zoomed out by half, everything is in view
  assert.deepEqual(countBeyond(centres, view(0.5, 10, 10)), { left: 0, right: 0, up: 0, down: 0 });
  // panned left by 300 px, the first node goes off the left edge and the far ones come in
  assert.deepEqual(countBeyond(centres, view(1, -300, 0)), { left: 3, right: 0, up: 1, down: 1 });
});

test("a cue pans to bring the farthest node that way inside, by at most 80% of the pane", () => {
  // the farthest right is at 450: moving the graph 450 - (400 - 60) = 110 px left shows it
  assert.deepEqual(panToward("right", at([100, 100], [450, 100]), view()), { x: -110, y: 0 });
  // far past the edge, one pane-width less a fifth at most
  assert.deepEqual(panToward("right", at([100, 100], [2000, 100]), view()), { x: -320, y: 0 });
  assert.deepEqual(panToward("left", at([-50, 100], [100, 100]), view()), { x: 110, y: 0 });
  assert.deepEqual(panToward("down", at([100, 100], [100, 330]), view()), { x: 0, y: -90 });
  assert.deepEqual(panToward("up", at([100, -1000]), view()), { x: 0, y: 240 });
  // at twice the size the same graph lies farther out
  assert.deepEqual(panToward("right", at([100, 100], [200, 100]), view(2)), { x: -60, y: 0 });
  // nothing that way, or no nodes at all: no pan
  assert.deepEqual(panToward("right", at([100, 100]), view()), { x: -0, y: 0 });
  assert.deepEqual(panToward("left", new Float64Array(0), view()), { x: 0, y: 0 });
});
