// Which backward() call's graph the graph pane draws. A loop recorded in full builds one
// graph per iteration, and every one of them feeds the same leaves: drawn together they fan
// out of each AccumulateGrad (the PyTorch tutorial's fit by hand draws ten copies of one
// iteration side by side). The picker in the graph's toolbar narrows the graph to one call:
// the nodes that call ran and the nodes they reach that no call ran (callGraph), not the ops
// that only point into it (a later `weight[:, 0]`); the stepper moving into another call, or
// a node of another call selected, moves the choice.
// A run opens on its default (defaultCall): a loop's first call where every call copies one
// graph too big to read ten times over, else every call.
import { h } from "./dom";
import type { GraphCall, Store, ViewState } from "./store";
import type { BackwardCall, TraceModel } from "./trace-model";

/** Copies of one graph drawn together up to this many grad_fn nodes stay whole by default:
 * four `x ** 2` feeding one x.grad is the picture of accumulation; three copies of a
 * 12-node network side by side are a maze. */
export const WHOLE_UP_TO = 20;

/** The backward calls recorded in full: those that ran grad_fn nodes (a call recorded metrics-only ran none). */
function callsRecordedInFull(model: TraceModel): BackwardCall[] {
  return model.backwards.filter((call) => call.byNode.size > 0);
}

/**
 * The grad_fn nodes the graph leaves out when it draws call `index` (a backward call's
 * index): every node but those of that call's graph (callGraph). Empty when `index` is null
 * or no call of the run, or when there is no call to choose (one call, or every call ran the
 * same nodes: `backward()` twice on one graph).
 */
export function nodesOutsideCall(model: TraceModel, index: number | null): ReadonlySet<number> {
  // the graph and the tape both ask, once per choice and per call the run adds
  const key = `${index}:${model.timeline.length}:${model.nodes.size}`;
  const kept = outsideMemo.get(model);
  if (kept?.key === key) return kept.nodes;
  const nodes = outsideOf(model, index);
  outsideMemo.set(model, { key, nodes });
  return nodes;
}

const outsideMemo = new WeakMap<TraceModel, { key: string; nodes: ReadonlySet<number> }>();

function outsideOf(model: TraceModel, index: number | null): Set<number> {
  const outside = new Set<number>();
  const chosen = index === null ? undefined : model.backward(index);
  if (!chosen || chosen.byNode.size === 0 || !callsToPick(model).length) return outside;
  const own = callGraph(model, chosen);
  for (const node of model.nodes.keys()) if (!own.has(node)) outside.add(node);
  return outside;
}

/**
 * The grad_fn nodes of call `call`'s graph: those it ran, and those its nodes' edges reach
 * that no call ran (the AccumulateGrad of a leaf that `autograd.grad` asked about, whose
 * gradient it returned rather than ran into `.grad`; a branch it did not need). A node no
 * call's graph holds is no call's: an op on a leaf after the loop (the tutorial's
 * `weight[:, 0]` in its last print) points into the leaf's AccumulateGrad but built no part
 * of the call's graph, and another call's AccumulateGrad of the same leaf is that call's.
 */
export function callGraph(model: TraceModel, call: BackwardCall): ReadonlySet<number> {
  const ranByAny = new Set<number>();
  for (const other of callsRecordedInFull(model)) for (const node of other.byNode.keys()) ranByAny.add(node);
  const own = new Set<number>(call.byNode.keys());
  const todo = [...own];
  while (todo.length) {
    const node = model.node(todo.pop()!);
    for (const edge of node?.edges ?? []) {
      if (edge.node === null || own.has(edge.node) || ranByAny.has(edge.node) || !model.nodes.has(edge.node)) continue;
      own.add(edge.node);
      todo.push(edge.node);
    }
  }
  return own;
}

/** The calls worth a choice: those recorded in full, when at least two ran different nodes. */
export function callsToPick(model: TraceModel): BackwardCall[] {
  const calls = callsRecordedInFull(model);
  if (calls.length < 2) return [];
  const first = calls[0].byNode;
  const differ = calls.some((call) => call.byNode.size !== first.size || [...call.byNode.keys()].some((n) => !first.has(n)));
  return differ ? calls : [];
}

/**
 * The call a run's graph opens on (index; null: every call): the first call recorded in
 * full where the calls to pick all walked copies of one graph (a loop: the same grad_fn
 * names in the same order, among the calls that finished) and together they draw more than
 * WHOLE_UP_TO grad_fn nodes; else every call (different graphs, or few nodes).
 */
export function defaultCall(model: TraceModel): number | null {
  const key = model.timeline.length;
  const kept = defaultMemo.get(model);
  if (kept?.key === key) return kept.call;
  const call = defaultOf(model);
  defaultMemo.set(model, { key, call });
  return call;
}

const defaultMemo = new WeakMap<TraceModel, { key: number; call: number | null }>();

function defaultOf(model: TraceModel): number | null {
  const calls = callsToPick(model);
  if (!calls.length) return null;
  const drawn = new Set<number>();
  for (const call of calls) for (const node of call.byNode.keys()) drawn.add(node);
  if (drawn.size <= WHOLE_UP_TO) return null;
  const walk = (call: BackwardCall) => call.entries.flatMap((e) => (e.exec ? [model.node(e.exec.node)?.name ?? "?"] : [])).join("/");
  const finished = calls.filter((call) => call.finished);
  const first = finished.length ? walk(finished[0]) : "";
  return finished.every((call) => walk(call) === first) ? calls[0].index : null;
}

/** The call the graph draws for choice `choice` (index; null: every call): "all" is every
 * call, null the run's default (defaultCall). */
export function drawnCall(model: TraceModel, choice: GraphCall): number | null {
  if (choice === "all") return null;
  return choice === null ? defaultCall(model) : choice;
}

/** What the graph draws when call `index` is opened from elsewhere (a chart's step): that
 * call's graph where the run has several to choose from, else the run's default (null). */
export function graphCallFor(model: TraceModel, index: number): GraphCall {
  return callsToPick(model).some((call) => call.index === index) ? index : null;
}

/** Where a stepper opened without a step starts: the first step of the call `choice` draws
 * (a link's `call=3` on the stepper, which step 0 would have moved back to call 1), else 0. */
export function openingStep(model: TraceModel, choice: GraphCall): number {
  return typeof choice === "number" ? (model.backward(choice)?.entries[0]?.index ?? 0) : 0;
}

/** The choice of call once the stepper is at `state`: the stepper's call where it stands in
 * another than the one drawn (one call drawn; every call's graph stays every call's; a
 * call the run has not made, a link's `call=99`, is left for the picker to say and drop). */
export function followStepper(model: TraceModel, state: ViewState): GraphCall {
  const drawn = drawnCall(model, state.graphCall);
  if (drawn === null || state.view !== "stepper" || state.step === null || !model.backward(drawn)) return state.graphCall;
  const entry = model.timeline[state.step];
  const moved = entry && entry.backward !== drawn && model.backward(entry.backward)?.byNode.size;
  return moved ? entry.backward : state.graphCall;
}

/** The choice of call once node `nodeId` is selected (the tensor it made, on the tape; the
 * inspector): where the call drawn leaves it out, the first call whose graph holds it, else
 * every call (an op no call's graph holds: a graph built and never walked). */
export function followSelection(model: TraceModel, graphCall: GraphCall, nodeId: number): GraphCall {
  const drawn = drawnCall(model, graphCall);
  if (drawn === null || !nodesOutsideCall(model, drawn).has(nodeId)) return graphCall;
  const ran = callsRecordedInFull(model).find((call) => call.byNode.has(nodeId));
  if (ran) return ran.index;
  return callsRecordedInFull(model).find((call) => callGraph(model, call).has(nodeId))?.index ?? "all";
}

/**
 * The toolbar's "Graph of" list: every call, or one call recorded in full. Hidden while
 * there is nothing to choose (one call, or calls that all ran the same graph). It keeps
 * `store.state.graphCall` and the stepper together; `changed` runs when the graph to draw
 * changed (the caller redraws).
 */
export class CallPicker {
  readonly element: HTMLElement;
  private readonly select: HTMLSelectElement;
  private listed = "";

  constructor(
    private readonly model: () => TraceModel,
    private readonly store: Store,
    private readonly changed: () => void,
  ) {
    this.select = h("select", { class: "gw-select", "aria-label": "Draw the graph of every backward() call, or of one" });
    this.select.addEventListener("change", () => this.choose(this.select.value === "all" ? "all" : Number(this.select.value)));
    this.element = h("label", { class: "gw-graph-calls", title: "Each backward() call recorded in full walked a graph of its own: draw them all, or one" }, h("span", { class: "gw-graph-calls-text", text: "Graph of" }), this.select);
    this.element.hidden = true;
    store.subscribe((state, keys) => this.onStore(state, keys));
  }

  /** The grad_fn nodes to leave out of the graph now. */
  hiddenNodes(): ReadonlySet<number> {
    const m = this.model();
    return nodesOutsideCall(m, drawnCall(m, this.store.state.graphCall));
  }

  /** List the run's calls again (a live run adds them; another run replaces them). A
   * finished run without the call chosen (a link's `call=99`) draws, and says, its default. */
  refresh(): void {
    const m = this.model();
    const calls = callsToPick(m);
    const chosen = this.store.state.graphCall;
    if (typeof chosen === "number" && m.isFinished && !calls.some((c) => c.index === chosen)) {
      queueMicrotask(() => this.store.set({ graphCall: null })); // not while the graph rebuilds
    }
    const key = calls.map((c) => c.index).join(",");
    if (key !== this.listed) {
      this.listed = key;
      this.select.replaceChildren(
        h("option", { value: "all", text: `every call (${calls.length})` }),
        ...calls.map((c) => h("option", { value: String(c.index), text: `call ${c.index + 1}${c.start.line ? ` · line ${c.start.line}` : ""}` })),
      );
      this.element.hidden = calls.length === 0;
    }
    const drawn = drawnCall(m, this.store.state.graphCall);
    this.select.value = calls.some((c) => c.index === drawn) ? String(drawn) : "all";
  }

  /** Draw call `index` ("all": every call); an open stepper goes to that call's first node. */
  private choose(index: number | "all"): void {
    const m = this.model();
    const first = index === "all" ? undefined : m.backward(index)?.entries[0];
    const inStepper = this.store.state.view === "stepper";
    this.store.set(first && inStepper ? { graphCall: index, step: first.index } : { graphCall: index });
  }

  private onStore(state: ViewState, keys: ReadonlySet<keyof ViewState>): void {
    let follow = keys.has("step") || keys.has("view") ? followStepper(this.model(), state) : state.graphCall;
    const sel = keys.has("selection") ? state.selection : null;
    // a node, or the node that made a tensor (a tape row selects the op's output)
    const node = sel?.kind === "node" ? sel.id : sel ? this.model().gradFnOfTensor(sel.id) : undefined;
    if (node !== undefined) follow = followSelection(this.model(), follow, node);
    if (follow !== state.graphCall) {
      this.store.set({ graphCall: follow });
      return;
    }
    if (keys.has("graphCall")) {
      this.refresh();
      this.changed();
    }
  }
}
