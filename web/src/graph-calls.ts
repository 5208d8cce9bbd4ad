// Which backward() call's graph the graph pane draws. A loop recorded in full builds one
// graph per iteration, and every one of them feeds the same leaves: drawn together they fan
// out of each AccumulateGrad (the PyTorch tutorial's fit by hand draws ten copies of one
// iteration side by side). The picker in the graph's toolbar narrows the graph to one call:
// the nodes that call ran, and any node no call ran (a graph built and never walked); the
// stepper moving into another call, or a node of another call selected, moves the choice.
import { h } from "./dom";
import type { Store, ViewState } from "./store";
import type { BackwardCall, TraceModel } from "./trace-model";

/** The backward calls recorded in full: those that ran grad_fn nodes (a call recorded metrics-only ran none). */
function callsRecordedInFull(model: TraceModel): BackwardCall[] {
  return model.backwards.filter((call) => call.byNode.size > 0);
}

/**
 * The grad_fn nodes the graph leaves out when it draws call `index` (a backward call's
 * index): those another call ran and this one did not. Empty when `index` is null or no
 * call of the run, or when every call ran the same nodes (`backward()` twice on one graph).
 */
export function nodesOutsideCall(model: TraceModel, index: number | null): ReadonlySet<number> {
  // the graph and the tape both ask, once per choice and per call the run adds
  const key = `${index}:${model.timeline.length}`;
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
  if (!chosen || chosen.byNode.size === 0) return outside;
  for (const call of callsRecordedInFull(model)) {
    if (call === chosen) continue;
    for (const node of call.byNode.keys()) if (!chosen.byNode.has(node)) outside.add(node);
  }
  return outside;
}

/** The calls worth a choice: those recorded in full, when at least two ran different nodes. */
export function callsToPick(model: TraceModel): BackwardCall[] {
  const calls = callsRecordedInFull(model);
  if (calls.length < 2) return [];
  const first = calls[0].byNode;
  const differ = calls.some((call) => call.byNode.size !== first.size || [...call.byNode.keys()].some((n) => !first.has(n)));
  return differ ? calls : [];
}

/** What the graph draws when call `index` is opened from elsewhere (a chart's step): that
 * call's graph where the run has several to choose from, else every call's (null). */
export function graphCallFor(model: TraceModel, index: number): number | null {
  return callsToPick(model).some((call) => call.index === index) ? index : null;
}

/** The call a choice of `graphCall` stands for, once the stepper is at `state`: the
 * stepper's call where it stands in another. */
export function followStepper(model: TraceModel, state: ViewState): number | null {
  if (state.graphCall === null || state.view !== "stepper") return state.graphCall;
  const entry = model.timeline[state.step ?? 0];
  return entry && model.backward(entry.backward)?.byNode.size ? entry.backward : state.graphCall;
}

/** The call a choice of `graphCall` stands for once node `nodeId` is selected (the tensor it
 * made, on the tape; the inspector): the first call that ran it, where the call chosen did not. */
export function followSelection(model: TraceModel, graphCall: number | null, nodeId: number): number | null {
  if (graphCall === null || model.backward(graphCall)?.byNode.has(nodeId) !== false) return graphCall;
  return callsRecordedInFull(model).find((call) => call.byNode.has(nodeId))?.index ?? graphCall;
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
    this.select.addEventListener("change", () => this.choose(this.select.value === "" ? null : Number(this.select.value)));
    this.element = h("label", { class: "gw-graph-calls", title: "Each backward() call recorded in full walked a graph of its own: draw them all, or one" }, h("span", { class: "gw-graph-calls-text", text: "Graph of" }), this.select);
    this.element.hidden = true;
    store.subscribe((state, keys) => this.onStore(state, keys));
  }

  /** The grad_fn nodes to leave out of the graph now. */
  hiddenNodes(): ReadonlySet<number> {
    return nodesOutsideCall(this.model(), this.store.state.graphCall);
  }

  /** List the run's calls again (a live run adds them; another run replaces them). A
   * finished run without the call chosen (a link's `call=99`) draws, and says, every call. */
  refresh(): void {
    const m = this.model();
    const calls = callsToPick(m);
    const chosen = this.store.state.graphCall;
    if (chosen !== null && m.isFinished && !calls.some((c) => c.index === chosen)) {
      queueMicrotask(() => this.store.set({ graphCall: null })); // not while the graph rebuilds
    }
    const key = calls.map((c) => c.index).join(",");
    if (key !== this.listed) {
      this.listed = key;
      this.select.replaceChildren(
        h("option", { value: "", text: `every call (${calls.length})` }),
        ...calls.map((c) => h("option", { value: String(c.index), text: `call ${c.index + 1}${c.start.line ? ` · line ${c.start.line}` : ""}` })),
      );
      this.element.hidden = calls.length === 0;
    }
    this.select.value = calls.some((c) => c.index === this.store.state.graphCall) ? String(this.store.state.graphCall) : "";
  }

  /** Draw call `index` (null: every call); an open stepper goes to that call's first node. */
  private choose(index: number | null): void {
    const m = this.model();
    const first = index === null ? undefined : m.backward(index)?.entries[0];
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
