// The graph of one backward() call, from real recorded traces: the nodes another call ran
// are left out, with their edges and the module groups they leave empty, and so are the ops
// that only point into the call's graph (a print after the loop); the shared leaves stay.
import assert from "node:assert/strict";
import { test } from "node:test";
import { buildGraph } from "../src/graph-build";
import { callsToPick, defaultCall, drawnCall, followSelection, followStepper, graphCallFor, nodesOutsideCall, WHOLE_UP_TO } from "../src/graph-calls";
import { Store } from "../src/store";
import type { TraceModel } from "../src/trace-model";
import { loadModel as model } from "./traces";

const names = (m: TraceModel, ids: Iterable<number>) => [...ids].map((id) => m.node(id)?.name).sort();

test("accumulate_loop: each of the four calls draws its own x ** 2 and the one AccumulateGrad of x", () => {
  const m = model("accumulate_loop");
  assert.equal(callsToPick(m).length, 4);
  const all = buildGraph(m, { showSaved: false, collapsed: new Set() });
  assert.equal(all.gradNodes, 5); // four PowBackward0 feeding one AccumulateGrad
  for (const call of m.backwards) {
    const hidden = nodesOutsideCall(m, call.index);
    assert.deepEqual(names(m, hidden), ["PowBackward0", "PowBackward0", "PowBackward0"]);
    const one = buildGraph(m, { showSaved: false, collapsed: new Set(), hidden });
    assert.equal(one.gradNodes, 2);
    const drawn = one.nodes.filter((n) => n.node !== undefined).map((n) => n.node!);
    assert.deepEqual(drawn.sort(), [...call.byNode.keys()].sort());
    // the leaf x is still drawn under its AccumulateGrad; no edge points at a node left out
    assert.ok(one.nodes.some((n) => n.kind === "leaf"));
    const ids = new Set(one.nodes.map((n) => n.id));
    for (const e of one.edges) assert.ok(ids.has(e.source) && ids.has(e.target), e.id);
  }
  // every call, or a call the run does not have: nothing left out
  assert.equal(nodesOutsideCall(m, null).size, 0);
  assert.equal(nodesOutsideCall(m, 99).size, 0);
});

test("two_models: one call's graph leaves the other model's module group out", () => {
  const m = model("two_models");
  const paths = (call: number) =>
    buildGraph(m, { showSaved: true, collapsed: new Set(), hidden: nodesOutsideCall(m, call) })
      .nodes.filter((n) => n.kind === "group")
      .map((n) => n.path);
  assert.deepEqual(paths(0), ["first"]);
  assert.deepEqual(paths(1), ["second"]);
  // folded, the group counts only the nodes drawn
  const folded = buildGraph(m, { showSaved: false, collapsed: new Set(["first"]), hidden: nodesOutsideCall(m, 0) });
  assert.deepEqual(
    folded.nodes.filter((n) => n.kind === "collapsed").map((n) => [n.path, n.count]),
    [["first", 4]],
  );
});

test("backward() twice on one graph, or once: nothing to choose", () => {
  assert.deepEqual(callsToPick(model("retain_graph")), []);
  assert.equal(nodesOutsideCall(model("retain_graph"), 1).size, 0);
  assert.deepEqual(callsToPick(model("cubic")), []);
  // cubic_twice builds the graph again before its second call: two graphs to choose from
  assert.equal(callsToPick(model("cubic_twice")).length, 2);
});

test("a chosen call follows the stepper into another call; every call stays every call", () => {
  const m = model("accumulate_loop");
  const store = new Store();
  const third = m.backwards[2].entries[0].index;
  assert.equal(followStepper(m, { ...store.state, view: "stepper", step: third, graphCall: 0 }), 2);
  assert.equal(followStepper(m, { ...store.state, view: "stepper", step: third, graphCall: "all" }), "all");
  // accumulate_loop's default is every call (five nodes): it stays the default
  assert.equal(followStepper(m, { ...store.state, view: "stepper", step: third, graphCall: null }), null);
  // outside the stepper the choice stays as it is
  assert.equal(followStepper(m, { ...store.state, view: "tape", step: third, graphCall: 0 }), 0);
});

test("a loop whose calls copy one big graph opens on its first call; small or different graphs on every call", () => {
  // the tutorial's fit by hand: ten copies of a 13-node graph, 94 nodes drawn together
  const fit = model("fit_by_hand");
  assert.equal(callsToPick(fit).length, 10);
  assert.equal(defaultCall(fit), 0);
  assert.equal(drawnCall(fit, null), 0);
  assert.equal(drawnCall(fit, "all"), null);
  assert.equal(drawnCall(fit, 4), 4);
  assert.equal(nodesOutsideCall(fit, drawnCall(fit, null)).size, 94 - 13);
  // the textbook loop: three calls of its 12-node network (28 nodes together)
  assert.equal(defaultCall(model("clean_training")), 0);
  // four x ** 2 into one x.grad (5 nodes): the picture of accumulation stays whole
  assert.equal(defaultCall(model("accumulate_loop")), null);
  assert.ok(buildGraph(model("accumulate_loop"), { showSaved: false, collapsed: new Set() }).gradNodes <= WHOLE_UP_TO);
  // nothing to choose: every call, the one graph there is
  assert.equal(defaultCall(model("cubic")), null);
  assert.equal(defaultCall(model("retain_graph")), null);
});

test("the stepper in a run's default call moves the graph with it into the next call", () => {
  const m = model("fit_by_hand");
  const store = new Store();
  const second = m.backwards[1].entries[0].index;
  const first = m.backwards[0].entries[1].index;
  assert.equal(followStepper(m, { ...store.state, view: "stepper", step: second, graphCall: null }), 1);
  // within the call drawn by default, the choice stays the default (the link stays short)
  assert.equal(followStepper(m, { ...store.state, view: "stepper", step: first, graphCall: null }), null);
  // a node that only call 3 ran moves it there; one the default call ran leaves it be
  const ranOnlyBy = (c: number) => [...m.backwards[c].byNode.keys()].find((n) => m.backwards.filter((b) => b.byNode.has(n)).length === 1)!;
  assert.equal(followSelection(m, null, ranOnlyBy(2)), 2);
  assert.equal(followSelection(m, null, ranOnlyBy(0)), null);
  assert.equal(followSelection(m, "all", ranOnlyBy(2)), "all");
});

test("a node of another call selected moves the choice to a call that ran it; a shared one does not", () => {
  const m = model("accumulate_loop");
  const pow = (call: number) => [...m.backwards[call].byNode.keys()].find((n) => m.node(n)?.name === "PowBackward0")!;
  const acc = [...m.backwards[0].byNode.keys()].find((n) => m.node(n)?.name === "AccumulateGrad")!;
  assert.equal(followSelection(m, 0, pow(3)), 3);
  assert.equal(followSelection(m, 0, pow(0)), 0);
  assert.equal(followSelection(m, 2, acc), 2); // every call ran x's AccumulateGrad
  assert.equal(followSelection(m, "all", pow(3)), "all"); // every call is drawn already
});

test("a call opened from a chart draws its own graph only where there are several", () => {
  assert.equal(graphCallFor(model("accumulate_loop"), 2), 2);
  assert.equal(graphCallFor(model("retain_graph"), 1), null);
  assert.equal(graphCallFor(model("cubic"), 0), null);
});

// hunt 65: a call's graph is what that call walked, not every op that points into it
const drawnNodes = (m: TraceModel, call: number) =>
  buildGraph(m, { showSaved: false, collapsed: new Set(), hidden: nodesOutsideCall(m, call) })
    .nodes.filter((n) => n.node !== undefined)
    .map((n) => n.node!);

test("sequential_fit: call 1's graph leaves out the weight[:, 0] selects of the print after the loop", () => {
  const m = model("sequential_fit");
  const selects = [...m.nodes.values()].filter((n) => n.name === "SelectBackward0");
  assert.equal(selects.length, 3); // weight[:, 0], [:, 1], [:, 2] in the last print, walked by no call
  for (const s of selects) assert.ok(!m.backwards.some((c) => c.byNode.has(s.id)));
  const call = m.backwards[0];
  const drawn = drawnNodes(m, 0);
  assert.deepEqual(drawn.sort(), [...call.byNode.keys()].sort()); // exactly the nodes it ran
  assert.ok(!names(m, drawn).includes("SelectBackward0"));
  // its two leaves, each once, under the AccumulateGrad the call ran
  const built = buildGraph(m, { showSaved: false, collapsed: new Set(), hidden: nodesOutsideCall(m, 0) });
  assert.equal(built.nodes.filter((n) => n.kind === "param").length, 2);
  // the tape greys the print's ops for call 1; every call's graph still draws them
  for (const s of selects) assert.ok(nodesOutsideCall(m, 0).has(s.id));
  assert.equal(buildGraph(m, { showSaved: false, collapsed: new Set() }).nodes.filter((n) => n.node !== undefined && m.node(n.node)?.name === "SelectBackward0").length, 3);
  // selecting one (its tape row) draws every call, the one graph that holds it
  assert.equal(followSelection(m, 0, selects[0].id), "all");
  assert.equal(followSelection(m, null, selects[0].id), "all");
});

test("jacobian_rows: each autograd.grad call draws its own graph and the one AccumulateGrad of xp it reached", () => {
  const m = model("jacobian_rows");
  const calls = callsToPick(m);
  assert.equal(calls.length, 10); // 16 rows, the first 10 recorded in full
  const accs = [...m.nodes.values()].filter((n) => n.name === "AccumulateGrad");
  assert.equal(accs.length, 10); // a new one per row: the graph before it was freed
  for (const call of calls) {
    const drawn = drawnNodes(m, call.index);
    const ran = [...call.byNode.keys()];
    assert.ok(!ran.some((n) => m.node(n)?.name === "AccumulateGrad")); // autograd.grad runs none
    // the nodes it ran, and the one AccumulateGrad their edges reach
    const accDrawn = drawn.filter((n) => m.node(n)?.name === "AccumulateGrad");
    assert.equal(accDrawn.length, 1, `call ${call.index + 1}`);
    assert.deepEqual(drawn.filter((n) => m.node(n)?.name !== "AccumulateGrad").sort(), ran.sort());
    const reached = ran.flatMap((n) => m.node(n)!.edges.map((e) => e.node));
    assert.ok(reached.includes(accDrawn[0]));
    // and the leaf xp once
    const built = buildGraph(m, { showSaved: false, collapsed: new Set(), hidden: nodesOutsideCall(m, call.index) });
    assert.equal(built.nodes.filter((n) => n.kind === "leaf").length, 1);
    assert.equal(built.edges.filter((e) => e.kind === "acc").length, 1);
  }
  // another call's AccumulateGrad selected moves the choice to that call
  const third = drawnNodes(m, 2).find((n) => m.node(n)?.name === "AccumulateGrad")!;
  assert.equal(followSelection(m, 0, third), 2);
});
