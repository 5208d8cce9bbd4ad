// The shared view state of one gradwalk view set: which panel is open, the stepper's
// position, the forward scrubber's position, the selection and what is hovered. Components
// read and write it; the URL mirrors the parts worth sharing (see url-state.ts).
import type { YScale } from "./chart-scales";
import type { StepEntry, TraceModel } from "./trace-model";

export type ViewName = "tape" | "stepper" | "inspector" | "charts";
export const VIEWS: readonly ViewName[] = ["tape", "stepper", "inspector", "charts"];

export type Selection = { kind: "node"; id: number } | { kind: "tensor"; id: number };

/** Things lit up together when one of them is hovered: source lines, tape ops, graph nodes. */
export interface Links {
  lines: number[];
  ops: number[];
  nodes: number[];
}

export interface ViewState {
  view: ViewName;
  /** Stepper position in the model's timeline; null before the first backward. */
  step: number | null;
  /** Forward scrubber: show the graph as it was after op `op`; null shows everything. */
  op: number | null;
  selection: Selection | null;
  hover: Links | null;
  /** The charts' y axes (chart-scales.ts). */
  yscale: YScale;
  /** Whether the charts draw gradient and update norms per parameter, not all together. */
  perParam: boolean;
  /** The run whose charts are drawn dashed under this one's (chart-baseline.ts); null: none. */
  compare: string | null;
  /** The ids of the charts hidden from the Charts view (loss, grad, metric:val_acc, ...). */
  hide: readonly string[];
  /** The backward call whose graph the graph pane draws (graph-calls.ts). */
  graphCall: GraphCall;
}

/** A choice of backward call for the graph: one call (its index, 0-based), "all" (every
 * call's graph together) or null (the run's default: graph-calls.ts defaultCall). */
export type GraphCall = number | "all" | null;

/** Equal values, or lists of equal values (a list set again with the same items is no change). */
function same(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  return Array.isArray(a) && Array.isArray(b) && a.length === b.length && a.every((v, i) => v === b[i]);
}

export type StoreListener = (state: ViewState, changed: ReadonlySet<keyof ViewState>) => void;

export class Store {
  state: ViewState = { view: "tape", step: null, op: null, selection: null, hover: null, yscale: "auto", perParam: false, compare: null, hide: [], graphCall: null };
  private readonly listeners = new Set<StoreListener>();

  subscribe(listener: StoreListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  set(patch: Partial<ViewState>): void {
    const changed = new Set<keyof ViewState>();
    for (const [key, value] of Object.entries(patch) as [keyof ViewState, unknown][]) {
      if (!same(this.state[key], value)) changed.add(key);
    }
    if (!changed.size) return;
    this.state = { ...this.state, ...patch };
    for (const listener of this.listeners) listener(this.state, changed);
  }
}

/** The stepper's timeline entry while the stepper is open (before it is moved, its first). */
export function stepperEntry(model: TraceModel, state: ViewState): StepEntry | null {
  if (state.view !== "stepper") return null;
  return model.timeline[state.step ?? 0] ?? null;
}

/** The source line to mark: the stepper's node (or backward call), else the scrubber's op. */
export function currentLine(model: TraceModel, state: ViewState): number | null {
  if (state.view === "stepper") {
    const entry = stepperEntry(model, state);
    if (entry?.exec) return model.nodeLine(entry.exec.node);
    if (entry?.kind === "end") return model.backward(entry.backward)?.start.line ?? null;
    return null;
  }
  return state.op !== null ? (model.op(state.op)?.line ?? null) : null;
}

// --- links: what lights up with what ----------------------------------------------------

export function linksOfNode(model: TraceModel, nodeId: number): Links {
  const node = model.node(nodeId);
  const line = node ? model.nodeLine(nodeId) : null;
  const op = node?.op ?? null;
  return { lines: line === null ? [] : [line], ops: op === null ? [] : [op], nodes: [nodeId] };
}

export function linksOfOp(model: TraceModel, index: number): Links {
  const op = model.op(index);
  if (!op) return { lines: [], ops: [], nodes: [] };
  const lines = [op.line, op.top_line].filter((l): l is number => l !== null);
  return { lines: [...new Set(lines)], ops: [index], nodes: [...op.nodes] };
}

export function linksOfLine(model: TraceModel, line: number): Links {
  return { lines: [line], ops: [...model.opsOnLine(line)], nodes: [...model.nodesOnLine(line)] };
}

export function linksOfTensor(model: TraceModel, id: number): Links {
  const t = model.tensor(id);
  const nodes = [model.gradFnOfTensor(id), model.accumulatorOf(id)].filter((n): n is number => n !== undefined);
  const line = t?.ev.line ?? null;
  const op = t?.ev.op ?? null;
  return { lines: line === null ? [] : [line], ops: op === null ? [] : [op], nodes };
}
