// A window on a graph too big to draw whole: the part nearest its outputs (the loss, where
// backward starts), which is what the view shows first anyway. Drawing costs Cytoscape
// about a millisecond per element on a slow laptop, all of it holding the page: a runaway
// loop's 27,000 nodes froze it for 20-40 s. `windowOf` cuts the window (pure data, like
// graph-build.ts); `PartDrawn` keeps which window graph.ts draws, and moves it to what the
// user looks at.
import { type GEdge, type GNode, type GraphElements, neighbours, outputsOf } from "./graph-build";

/** What a window shows of a graph. */
export interface GraphWindow extends GraphElements {
  /** grad_fn nodes drawn (a folded group counts its members); equal to `gradNodes` when nothing was cut */
  shownGradNodes: number;
  /** whether nodes were left out */
  cut: boolean;
}

/** Whether `n` is laid out (a module group's box is not: it wraps its members). */
function laidOut(n: GNode): boolean {
  return n.kind !== "group";
}

/** The grad_fn nodes `n` stands for (AccumulateGrad is one; a folded group, its members). */
function gradCount(n: GNode): number {
  if (n.kind === "op" || n.kind === "acc") return 1;
  return n.kind === "collapsed" ? (n.count ?? 0) : 0;
}

/**
 * The at most `max` laid-out nodes of `built` nearest its outputs, with the edges between
 * them and the module groups around them; `built` itself (cut: false) when it has no more.
 *
 * Nearest: the outputs (nodes no gradient flows into) one at a time, the newest first (a
 * live run shows its latest ops), each followed breadth-first by what it reaches that is not
 * kept yet (whole, once the first is in: no small graph is cut through); then any node no
 * output reaches, newest first. With `focus` (the id of a node
 * of `built`: the stepper's, the selection), the nodes nearest it come first instead,
 * breadth-first along the edges either way, so the window shows it with what surrounds it.
 */
export function windowOf(built: GraphElements, max: number, focus: string | null = null): GraphWindow {
  const all = built.nodes.filter(laidOut);
  if (all.length <= max) return { ...built, shownGradNodes: built.gradNodes, cut: false };
  const byId = new Map(built.nodes.map((n) => [n.id, n]));
  const out = neighbours(built.edges, "out");
  const kept = new Set<string>();
  // What `from` reaches that is not kept yet, breadth-first: kept whole, or not at all once
  // something is kept (a small graph cut through threw the breadth-first layout of all the
  // others out of line); the first one is cut to fit. Says whether there is room for more.
  const reach = (from: string): boolean => {
    if (kept.has(from)) return kept.size < max;
    const found = [from];
    const seen = new Set(found);
    for (let i = 0; i < found.length; i++) {
      for (const next of out.get(found[i]) ?? []) {
        if (kept.has(next) || seen.has(next)) continue;
        seen.add(next);
        found.push(next);
      }
    }
    if (kept.size && kept.size + found.length > max) return false;
    for (const id of found.slice(0, max - kept.size)) kept.add(id);
    return kept.size < max;
  };
  const focusNode = focus === null ? undefined : byId.get(focus);
  if (focusNode && laidOut(focusNode)) {
    const into = neighbours(built.edges, "in");
    kept.add(focusNode.id);
    const queue = [focusNode.id];
    for (let i = 0; i < queue.length && kept.size < max; i++) {
      for (const next of [...(out.get(queue[i]) ?? []), ...(into.get(queue[i]) ?? [])]) {
        if (kept.size >= max) break;
        if (kept.has(next)) continue;
        kept.add(next);
        queue.push(next);
      }
    }
  }
  const outputs = outputsOf(built.nodes, built.edges);
  let room = kept.size < max;
  for (let i = outputs.length - 1; i >= 0 && room; i--) room = reach(outputs[i].id);
  for (let i = all.length - 1; i >= 0 && room; i--) room = reach(all[i].id);
  // the module groups around what is kept, outermost first (a parent before its children)
  const groups = new Set<string>();
  for (const id of kept) {
    for (let parent = byId.get(id)?.parent ?? null; parent && !groups.has(parent); parent = byId.get(parent)?.parent ?? null) {
      groups.add(parent);
    }
  }
  const nodes = built.nodes.filter((n) => kept.has(n.id) || groups.has(n.id));
  const edges: GEdge[] = built.edges.filter((e) => kept.has(e.source) && kept.has(e.target));
  const shownGradNodes = nodes.reduce((sum, n) => sum + gradCount(n), 0);
  return { nodes, edges, gradNodes: built.gradNodes, shownGradNodes, cut: true };
}

/** Anything that can say whether it holds an element id (a Set, a Map). */
export interface Ids {
  has(id: string): boolean;
}

const NOTHING: Ids = new Set<string>();

/**
 * Which part of the graph the view draws: all of it when it is small or the user asked
 * (Draw all), else the part nearest the output, or around what the user looks at when the
 * part nearest the output leaves it out (the stepper's node, else the selection, else the
 * tape scrubber's op). graph.ts calls `take` on each rebuild and `follow` whenever what is
 * looked at may have changed (and after each rebuild, so quick moves are never lost);
 * `redraw` asks it for a rebuild.
 */
export class PartDrawn {
  /** Whether the user asked for every node. */
  all = false;
  /** Whether the last rebuild drew a part only. */
  cut = false;
  /** Every element id of the whole graph, at the last rebuild that drew a part. */
  whole: Ids = NOTHING;
  /** What the part is drawn around (null: the part nearest the output). */
  private focus: string | null = null;
  private revealPending = false;

  constructor(
    private readonly max: number,
    private readonly redraw: () => void,
  ) {}

  /** Another graph: back to the part nearest its output. */
  reset(): void {
    this.all = this.revealPending = false;
    this.focus = null;
  }

  /** Whether the part is drawn around something other than the output. */
  get aroundFocus(): boolean {
    return this.focus !== null;
  }

  /** The part of `whole` to draw now. */
  take(whole: GraphElements): GraphWindow {
    const part = windowOf(whole, this.all ? Number.POSITIVE_INFINITY : this.max, this.focus);
    this.cut = part.cut;
    // (only a part consults it: `follow` looks up what is left out)
    this.whole = part.cut ? new Set(whole.nodes.map((n) => n.id)) : NOTHING;
    return part;
  }

  /**
   * Make the part show element `wanted` of the whole graph (what the user looks at), which
   * the part `drawn` now may leave out; with `wanted` null, the part nearest the output.
   * The latest call wins: a move made while the part is being redrawn is followed after.
   */
  follow(wanted: string | null, drawn: Ids): void {
    if (this.all) return;
    if (wanted === null || !this.whole.has(wanted)) {
      if (this.focus !== null) {
        this.focus = null;
        this.redraw();
      }
      return;
    }
    // (shown already, and no other part on its way: nothing to do)
    if (this.focus === wanted || !this.cut || (drawn.has(wanted) && !this.revealPending)) return;
    this.focus = wanted;
    this.revealPending = true;
    this.redraw();
  }

  /**
   * After a rebuild that drew `drawn`: the element to bring into view, once (what the part
   * was drawn around; not yet, when the rebuild that draws it is still to come).
   */
  toReveal(drawn: Ids): string | null {
    if (!this.revealPending || this.focus === null || !drawn.has(this.focus)) return null;
    this.revealPending = false;
    return this.focus;
  }
}
