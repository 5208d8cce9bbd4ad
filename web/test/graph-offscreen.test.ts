// The cues at the graph pane's edges (src/graph-offscreen.ts): what they count, how far they pan.
import assert from "node:assert/strict";
import { test } from "node:test";
import { countBeyond, panToward, type Viewport } from "../src/graph-offscreen";
import { clearOf } from "../src/graph-viewport";

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

test("given the nodes' sizes, a node a third or more cut off by an edge counts that way", () => {
  // half widths 60 and half heights 20: a node at x = 390 shows 70 of its 120 px (50 cut);
  // one at x = 360 shows 100 (20 cut, a sixth); one at y = 295 shows 25 of its 40 px
  const centres = at([390, 100], [360, 200], [200, 295], [-15, 150]);
  const halves = at([60, 20], [60, 20], [60, 20], [60, 20]);
  assert.deepEqual(countBeyond(centres, view(), halves), { left: 1, right: 1, up: 0, down: 1 });
  assert.deepEqual(countBeyond(centres, view()), { left: 1, right: 0, up: 0, down: 0 });
  // the cue's pan then brings its far edge 24 px inside: 390 + 60 - (400 - 24) = 74
  assert.deepEqual(panToward("right", centres, view(), 24, halves), { x: -74, y: 0 });
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

test("a node revealed under a cue is moved clear of it, the least way, toward the middle", () => {
  const pane = { width: 400, height: 300 };
  const right = { x1: 320, x2: 394, y1: 138, y2: 162 }; // "7 more ▸", mid right
  const corner = { x1: 320, x2: 394, y1: 270, y2: 294 }; // "47 more ▾", bottom right
  // under the right cue: across is the shorter way out (left by 345 - 320 + 8 = 33)
  assert.deepEqual(clearOf({ x1: 300, x2: 345, y1: 130, y2: 150 }, [right], pane, { x: 0, y: 0 }), { x: -33, y: 0 });
  // under the corner cue, low and wide: up is shorter
  assert.deepEqual(clearOf({ x1: 250, x2: 390, y1: 280, y2: 298 }, [corner], pane, { x: 0, y: 0 }), { x: 0, y: -36 });
  // the box is where the pan that brought it in view puts it: clear there, the pan stays as it is
  assert.deepEqual(clearOf({ x1: 300, x2: 345, y1: 200, y2: 220 }, [right], pane, { x: 0, y: 60 }), { x: 0, y: 60 });
  assert.deepEqual(clearOf({ x1: 10, x2: 60, y1: 10, y2: 40 }, [right, corner], pane, { x: 5, y: 0 }), { x: 5, y: 0 });
});
