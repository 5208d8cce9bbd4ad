// How the graph looks at one position of the stepper or the scrubber: which nodes ran, which
// one runs now, the gradient on each edge, each leaf's .grad, what was freed. A step
// restyles only what it changes (a big graph has thousands of elements).
import type { Core, EdgeSingular, NodeSingular } from "cytoscape";
import type { GEdge, GNode } from "./graph-build";
import { tensorNodeLabel } from "./graph-build";
import { gradValueAt } from "./graph-tips";
import { backwardCallText } from "./naming";
import type { StepEntry, TraceModel } from "./trace-model";
import type { OpRecorded } from "./types/events";
import { fmtShort } from "./values";

type StepClass = "idle" | "pending" | "done" | "current";

interface Shown {
  entry: StepEntry | null;
  scrub: number | null;
}

/** What the painter needs from the graph view. */
export interface PainterHost {
  readonly cy: Core;
  readonly model: TraceModel;
  /** Big graphs carry no gradient labels on edges. */
  readonly big: boolean;
  /** The element a grad_fn node is drawn as (itself, or the folded group holding it). */
  elementOfNode(nodeId: number): string | null;
}

export class StepPainter {
  private stepClass = new Map<string, string>();
  private edgeLabel = new Map<string, string>();
  private shown: Shown | null = null;
  private memberCache = new Map<string, number[]>();
  /** grad_fn node id -> ids of its outgoing grad edges; -> ids of its saved chips. */
  private edgesFrom = new Map<number, string[]>();
  private chipsOf = new Map<number, string[]>();
  /** The plain inputs' element ids: no backward call ever reaches them. */
  private inputs = new Set<string>();
  /** The leaves whose label (their .grad line) changed since the last redraw: redrawn once their restyle is over. */
  private relabelled: NodeSingular[] = [];
  private redrawTimer = 0;

  constructor(private readonly host: PainterHost) {}

  /** Forget everything painted (new elements, a new Cytoscape instance, a new model). */
  reset(): void {
    this.stepClass.clear();
    this.edgeLabel.clear();
    this.shown = null;
    this.memberCache.clear();
  }

  /** Index the built elements (call after each rebuild); the next paint looks at all. */
  index(nodes: GNode[], edges: GEdge[]): void {
    this.edgesFrom.clear();
    this.chipsOf.clear();
    this.inputs = new Set(nodes.filter((n) => n.kind === "input").map((n) => n.id));
    for (const n of nodes) {
      if (n.owner !== undefined) this.chipsOf.set(n.owner, [...(this.chipsOf.get(n.owner) ?? []), n.id]);
    }
    for (const e of edges) {
      if (e.from !== undefined) this.edgesFrom.set(e.from, [...(this.edgesFrom.get(e.from) ?? []), e.id]);
    }
    this.shown = null;
  }

  /**
   * The step classes some node has as painted now (`current`, `done`, `pending`, `idle`,
   * `freed`), each once: what the legend lists while a step is shown. A freed node shows as
   * freed, whatever else it is; a faded plain input counts as `unreached` (no call reaches it).
   */
  looksShown(): Set<string> {
    const shown = new Set<string>();
    for (const [id, cls] of this.stepClass) {
      const parts = cls.split(" ");
      if (parts.includes("freed")) shown.add("freed");
      else if (parts.includes("idle") && this.inputs.has(id)) shown.add("unreached");
      else for (const part of parts) if (part && part !== "future") shown.add(part);
    }
    return shown;
  }

  /** Forget one element (it was removed from the graph). */
  forget(id: string): void {
    this.stepClass.delete(id);
    this.edgeLabel.delete(id);
  }

  /** Paint the graph at stepper position `entry` (or, with no entry, at scrubber op `scrub`). */
  paint(entry: StepEntry | null, scrub: number | null): { changed: boolean } {
    const prev = this.shown;
    this.shown = { entry, scrub };
    const cy = this.host.cy;
    cy.batch(() => {
      const touched = prev ? this.touchedBetween(prev, entry, scrub) : null;
      if (touched) {
        for (const id of touched) {
          const el = cy.getElementById(id);
          if (!el.nonempty()) continue;
          if (el.isNode()) this.updateNode(el, entry, scrub);
          else this.updateEdge(el as EdgeSingular, entry);
        }
      } else {
        cy.nodes().forEach((el) => this.updateNode(el, entry, scrub));
        cy.edges().forEach((el) => this.updateEdge(el, entry));
      }
    });
    if (this.relabelled.length) {
      // measured before the new label was styled, their boxes would stay the old label's
      for (const node of this.relabelled) forgetBounds(node);
      this.redrawAfterTransition();
    }
    return { changed: entry !== prev?.entry };
  }

  /**
   * Draw the whole graph again once the nodes' colour transitions (180 ms, graph-style.ts)
   * are over. Cytoscape keeps a node's cached picture when its label changes during one: a
   * leaf that got its `.grad [−0.00148, −0.0042]` line as it became the running node was
   * drawn from its old, narrower picture stretched to the new size (the text twice as wide,
   * cut at both ends, and ".grad None" over ".grad" on its neighbour) until the view moved.
   * Its label's box is measured anew too: kept from its old label (`.grad None`), it cut a
   * running parameter's `.grad ‖·‖ 0.0163` to `rad ‖·‖ 0.01`.
   */
  private redrawAfterTransition(): void {
    window.clearTimeout(this.redrawTimer);
    // a step's pan (following the running node) draws from the same pictures: after it too
    const redraw = (tries: number) => {
      const cy = this.host.cy;
      if (cy.destroyed()) return;
      if (cy.animated() && tries > 0) {
        this.redrawTimer = window.setTimeout(() => redraw(tries - 1), 100);
        return;
      }
      // every label changed since the last redraw (quick steps restart the wait)
      for (const node of this.relabelled) if (!node.removed()) forgetBounds(node);
      this.relabelled = [];
      cy.forceRender();
    };
    this.redrawTimer = window.setTimeout(() => redraw(20), 240);
  }

  /**
   * The elements whose look changes between two stepper positions of one backward call:
   * the nodes run in between, their leaves and their outgoing edges. Null when
   * everything must be looked at (another call, the end of a call, the scrubber).
   */
  private touchedBetween(prev: Shown, entry: StepEntry | null, scrub: number | null): Set<string> | null {
    const a = prev.entry;
    if (!a || !entry || scrub !== null || prev.scrub !== null) return null;
    if (a.backward !== entry.backward || a.kind === "end" || entry.kind === "end") return null;
    const model = this.host.model;
    const call = model.backward(entry.backward);
    if (!call) return null;
    const first = call.entries[0].index;
    const ids = new Set<string>();
    for (let i = Math.min(a.index, entry.index); i <= Math.max(a.index, entry.index); i++) {
      const exec = call.entries[i - first]?.exec;
      if (!exec) continue;
      const el = this.host.elementOfNode(exec.node);
      if (el) ids.add(el);
      const node = model.node(exec.node);
      if (node?.name === "AccumulateGrad" && node.tensor !== null) ids.add(`t${node.tensor}`).add(`a${exec.node}`);
      for (const e of this.edgesFrom.get(exec.node) ?? []) ids.add(e);
      for (const chip of this.chipsOf.get(exec.node) ?? []) ids.add(chip);
    }
    return ids;
  }

  private updateNode(el: NodeSingular, entry: StepEntry | null, scrub: number | null): void {
    const d = el.data() as GNode;
    // Opacity on a compound node would fade everything inside it: groups stay plain.
    if (d.kind === "group") return;
    const cls = entry ? this.nodeStepClass(d, entry) : "";
    const future = scrub !== null && d.op !== null && d.op !== undefined && d.op > scrub;
    const want = (future ? "future " : "") + cls;
    if ((this.stepClass.get(d.id) ?? "") !== want) {
      el.removeClass("future idle pending done current freed");
      if (want) el.addClass(want);
      this.stepClass.set(d.id, want);
    }
    if (d.kind === "leaf" || d.kind === "param") this.setLeafLabel(el, d, entry);
  }

  private updateEdge(el: EdgeSingular, entry: StepEntry | null): void {
    const d = el.data() as GEdge & { shape: string };
    let label = d.shape;
    let cls = "";
    if (entry && d.kind === "grad" && d.from !== undefined && d.slot !== undefined) {
      const ran = this.host.model.backward(entry.backward)?.byNode.get(d.from);
      if (ran && ran.index <= entry.index && ran.exec) {
        label = this.host.big ? "" : fmtShort(ran.exec.grad_out[d.slot]);
        cls = ran.index === entry.index ? "flowing" : "flowed";
      }
    } else if (entry && d.kind === "acc") {
      // AccumulateGrad's `.grad` edge into its leaf carries the gradient once it ran in this
      // call: it stayed grey at the very step that writes x.grad (the sum is on the leaf)
      const ran = this.host.model.backward(entry.backward)?.byNode.get(Number(d.source.slice(1)));
      if (ran && ran.index <= entry.index) cls = ran.index === entry.index ? "flowing" : "flowed";
    }
    // An edge of another backward call (one of its two nodes is idle) fades with its nodes,
    // and its label is not drawn over the labels of the call being stepped.
    if (!cls && entry && (this.isIdle(d.source) || this.isIdle(d.target))) cls = "idle";
    const key = `${cls}|${label}`;
    if (this.edgeLabel.get(d.id) !== key) {
      el.removeClass("flowing flowed idle");
      if (cls) el.addClass(cls);
      el.data("label", label);
      this.edgeLabel.set(d.id, key);
    }
  }

  private isIdle(nodeId: string): boolean {
    return (this.stepClass.get(nodeId) ?? "").split(" ").includes("idle");
  }

  private nodeStepClass(d: GNode, entry: StepEntry): StepClass | `${StepClass} freed` {
    const model = this.host.model;
    const call = model.backward(entry.backward);
    if (!call) return "idle";
    const ids: number[] =
      d.node !== undefined
        ? [d.node]
        : d.kind === "collapsed" && d.path
          ? this.membersOf(d.path)
          : d.owner !== undefined
            ? [d.owner]
            : d.tensor !== undefined
              ? [model.accumulatorOf(d.tensor)].filter((x): x is number => x !== undefined)
              : [];
    let best: StepClass = "idle";
    let freed = false;
    for (const id of ids) {
      const ran = call.byNode.get(id);
      if (!ran) {
        if (this.wasFreed(id, entry)) freed = true;
        continue;
      }
      if (ran.index === entry.index) best = "current";
      else if (ran.index < entry.index && best !== "current") best = "done";
      else if (best === "idle") best = "pending";
    }
    if (entry.kind === "end" && call.finished?.graph_freed && best === "done" && d.kind !== "leaf" && d.kind !== "param") freed = true;
    return freed ? `${best} freed` : best;
  }

  /** The grad_fn nodes inside module `path` (for a folded group). */
  membersOf(path: string): number[] {
    const cached = this.memberCache.get(path);
    if (cached && cached.length) return cached;
    const out: number[] = [];
    for (const n of this.host.model.nodes.values()) {
      if (n.module_path && (n.module_path === path || n.module_path.startsWith(`${path}.`))) out.push(n.id);
    }
    this.memberCache.set(path, out);
    return out;
  }

  /** Whether node `id` ran in an earlier backward call that freed the graph before `entry`. */
  private wasFreed(id: number, entry: StepEntry): boolean {
    const model = this.host.model;
    for (const call of model.backwards) {
      if (call.index >= entry.backward) break;
      if (call.finished?.graph_freed && call.byNode.has(id) && model.node(id)?.name !== "AccumulateGrad") return true;
    }
    return false;
  }

  private setLeafLabel(el: NodeSingular, d: GNode, entry: StepEntry | null): void {
    const model = this.host.model;
    const lines = tensorNodeLabel(model, d.tensor!);
    if (entry) lines.push(`.grad ${gradAt(model, d.tensor!, entry, d.gradByNorm ? 1 : 2)}`);
    const label = lines.join("\n");
    if (el.data("label") !== label) {
      el.data("label", label);
      this.relabelled.push(el);
    }
  }
}

/**
 * What leaf `tensor`'s `.grad` holds at stepper position `entry`, short (graph-tips.ts's
 * gradValueAt says which value). `whole`: the most numbers written out (1 for a parameter
 * whose vector its hexagon cannot hold).
 */
export function gradAt(model: TraceModel, tensor: number, entry: StepEntry, whole = 2): string {
  const grad = gradValueAt(model, tensor, entry);
  return grad ? fmtShort(grad, whole) : "None";
}

/** The note shown over the graph at the end of a backward call ("" for none). */
export function bannerText(model: TraceModel, entry: StepEntry | null): string {
  if (entry?.kind !== "end" || !entry.finished) return "";
  const f = entry.finished;
  if (!f.ok) return failureText(model, entry.backward);
  if (f.graph_freed) {
    return `Graph freed: ${backwardCallText(model, entry.backward)} released the saved tensors. A second backward() through it needs retain_graph=True.`;
  }
  return "Graph kept (retain_graph=True): it can be walked again.";
}

/** Why a backward call failed, when the trace shows it: an earlier call freed its graph. */
function failureText(model: TraceModel, index: number): string {
  const call = model.backward(index);
  const where = call?.start.line ? ` at line ${call.start.line}` : "";
  const rootFn = call ? model.gradFnOfTensor(call.start.roots[0]) : undefined;
  const freer = model.backwards.find((b) => b.index < index && b.finished?.graph_freed && rootFn !== undefined && b.byNode.has(rootFn));
  if (freer) {
    const at = freer.start.line ? ` at line ${freer.start.line}` : "";
    return `backward()${where} failed: the backward()${at} already freed this graph (its saved tensors are gone).`;
  }
  return `backward()${where} failed: see the output panel.`;
}

const STOPPED: Record<string, string> = {
  timeout: "ran out of time",
  cancelled: "was stopped",
  crashed: "crashed",
  limit: "reached a limit",
};

/**
 * Why a run that ended before it built a graph has none: its error and line (an error in a
 * data-loading loop is no sign that nothing requires grad), or its stop. Null for a run that
 * finished, or whose error is about grad itself (the diagnoses below say what to change).
 */
function endedEarly(model: TraceModel): string | null {
  const status = model.finished?.status;
  if (!status || status === "ok") return null;
  const error = model.errors[model.errors.length - 1];
  if (status === "error" && (!error || /requires? grad|requires_grad|grad_fn/.test(error.message))) return null;
  return `No graph: the run ${howItEnded(model)} before any operation built one. The output panel says more.`;
}

/**
 * How a run that did not finish cleanly ended, for a sentence about it ("stopped on
 * RuntimeError at line 4", "ran out of time"); null while it runs or when it finished.
 */
export function howItEnded(model: TraceModel): string | null {
  const status = model.finished?.status;
  if (!status || status === "ok") return null;
  const error = model.errors[model.errors.length - 1];
  if (status === "error" && error) return `stopped on ${error.exc_type}${error.line ? ` at line ${error.line}` : ""}`;
  return STOPPED[status] ?? "ended";
}

/**
 * What the graph pane says while it shows no node: before a run, while one starts, or after
 * a run that built no graph (and why: everything under no_grad, a leaf that requires grad
 * reached the ops only through .data or .detach(), or nothing requiring grad).
 */
export function emptyGraphText(model: TraceModel, beforeRun: string | null = null): string {
  if (!model.run) return beforeRun ?? "Press ▶ Run (or Ctrl+Enter) to run the code: the graph autograd records appears here.";
  if (!model.isFinished) return "Running: the graph appears as the code builds it.";
  const ended = endedEarly(model);
  if (ended) return ended;
  if (model.ops.length === 0) return "This run made no tensor operation, so autograd recorded no graph.";
  const readsGrad = (op: OpRecorded) => op.grad_mode !== "grad" && op.inputs.some((id) => model.tensor(id)?.ev.requires_grad);
  if (model.ops.some(readsGrad)) {
    return "No graph: the operations on tensors that require grad ran under torch.no_grad() or inference_mode(), which record nothing for backward.";
  }
  // a leaf requires grad, yet no op took it: its values reached the ops without it (w.data * 3),
  // or it was not used at all
  const wanting = [...model.tensors.values()].filter((t) => t.ev.is_leaf && t.ev.requires_grad && (t.name ?? t.paramName));
  if (wanting.length) {
    const names = wanting.slice(0, 3).map((t) => t.name ?? t.paramName);
    const verb = wanting.length === 1 ? "requires" : "require";
    const them = wanting.length === 1 ? "it" : "them";
    return `No graph: ${names.join(", ")}${wanting.length > 3 ? ", …" : ""} ${verb} grad, but no operation took ${them} as an input (only ${them === "it" ? "its" : "their"} values, through .data or .detach(), or none at all), so nothing was recorded for backward.`;
  }
  return "No graph: no operation had an input that requires grad. Make one with requires_grad=True, e.g. torch.tensor(2.0, requires_grad=True).";
}

/**
 * Make Cytoscape measure `node`'s bounds (its label's box among them) at its next draw. It
 * keeps them while the node stays put, also across a label change that it measured while the
 * old label was still styled; the public API has no call for this, the collection method is
 * Cytoscape's own (3.x).
 */
function forgetBounds(node: NodeSingular): void {
  (node as unknown as { dirtyBoundingBoxCache?: () => void }).dirtyBoundingBoxCache?.();
}
