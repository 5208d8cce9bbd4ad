// Turn the trace model into graph elements: grad_fn nodes, AccumulateGrad and the leaves
// they feed, saved tensors, and module groups (compound nodes), with collapsed groups
// folded into one node. Pure data: graph.ts hands it to Cytoscape and the layout.
import { innerExpr, madeByNodeText, outputTensors, tensorExpr } from "./naming";
import type { TraceModel } from "./trace-model";
import { fmt, fmtShort, scalarOf, shapesText, shapeText } from "./values";

export type NodeKind = "op" | "acc" | "leaf" | "param" | "input" | "saved" | "group" | "collapsed";

export interface GNode {
  id: string;
  kind: NodeKind;
  label: string;
  parent: string | null;
  width: number;
  height: number;
  /** grad_fn node id (op, acc) */
  node?: number;
  /** tensor id (leaf, param, input, saved) */
  tensor?: number;
  /** forward op that made it: hidden while the scrubber is before it */
  op: number | null;
  /** module path of a group */
  path?: string;
  /** members folded into a collapsed group */
  count?: number;
  /** the grad_fn a saved chip belongs to */
  owner?: number;
  /** a parameter whose `.grad` vector does not fit its hexagon's bottom row: it reads the norm */
  gradByNorm?: boolean;
}

export type EdgeKind = "grad" | "acc" | "saved";

export interface GEdge {
  id: string;
  kind: EdgeKind;
  source: string;
  target: string;
  /** grad edge: the node sending the gradient and its input number */
  from?: number;
  slot?: number;
  label: string;
}

export interface BuildOptions {
  showSaved: boolean;
  /** Label size relative to the default (the presenter size is bigger). */
  fontScale?: number;
  collapsed: ReadonlySet<string>;
  /** Graphs above this many grad_fn nodes drop labels' second line to save layout work. */
  compactAbove?: number;
  /** grad_fn nodes left out, with their edges (another backward call's: graph-calls.ts). */
  hidden?: ReadonlySet<number>;
}

export interface GraphElements {
  nodes: GNode[];
  edges: GEdge[];
  /** grad_fn node count before folding */
  gradNodes: number;
}

const CHAR_W = 7.4;
const LINE_H = 17;
let scale = 1;

function size(lines: string[], minW = 56): { width: number; height: number } {
  const longest = Math.max(...lines.map((l) => l.length));
  return { width: Math.max(minW * scale, Math.round(longest * CHAR_W * scale + 26)), height: Math.round(lines.length * LINE_H * scale + 16) };
}

/**
 * The width a leaf's ellipse needs so that each of `lines` fits inside it at its own row, for
 * an ellipse `height` high: it narrows away from its middle row, so one as wide as the longest
 * line cut a top or bottom line off (`.grad [18, 36]` under `x` and `[2]`). `charW`: the
 * label's advance per character, model px.
 */
function ellipseWidth(lines: string[], height: number, charW: number): number {
  const lineH = LINE_H * scale;
  const glyphHalf = 0.5 * (LINE_H - 4) * scale; // a line's ink, less its leading
  let width = 0;
  lines.forEach((line, i) => {
    const fromMiddle = Math.abs(i - (lines.length - 1) / 2) * lineH + glyphHalf;
    // the part of the width left at that distance from the middle row
    const left = Math.sqrt(Math.max(0, 1 - Math.min(1, (2 * fromMiddle) / height) ** 2));
    width = Math.max(width, (line.length * charW + 12 * scale) / Math.max(left, 0.3));
  });
  return Math.round(width);
}

/**
 * The graph's outputs, where backward starts: grad_fn nodes (and folded groups) no gradient
 * flows into, in the order built (oldest first).
 */
export function outputsOf(nodes: readonly GNode[], edges: readonly GEdge[]): GNode[] {
  const fed = new Set<string>();
  for (const e of edges) if (e.kind === "grad") fed.add(e.target);
  return nodes.filter((n) => (n.kind === "op" || n.kind === "acc" || n.kind === "collapsed") && !fed.has(n.id));
}

/** Each element's neighbours along `edges`: the targets of its edges ("out"), or their sources ("in"). */
export function neighbours(edges: readonly GEdge[], way: "out" | "in"): Map<string, string[]> {
  const found = new Map<string, string[]>();
  for (const e of edges) {
    const [from, to] = way === "out" ? [e.source, e.target] : [e.target, e.source];
    const list = found.get(from);
    if (list) list.push(to);
    else found.set(from, [to]);
  }
  return found;
}

export function groupId(path: string): string {
  return `g:${path}`;
}

function parentPath(path: string): string | null {
  const i = path.lastIndexOf(".");
  return i < 0 ? null : path.slice(0, i);
}

/** A tensor node's label: `x = 2.5`, `fc1.weight 16×4`, `t3 5×4`. */
export function tensorNodeLabel(model: TraceModel, id: number): string[] {
  const t = model.tensor(id);
  const name = tensorExpr(model, id);
  if (!t) return [name];
  const v = scalarOf(t.ev.value);
  if (v !== null && t.ev.shape.length === 0) return [`${name} = ${fmt(v)}`];
  return [name, shapeText(t.ev.shape)];
}

/**
 * The width a parameter's hexagon needs so that each of `lines` fits inside it at its own
 * row, for a hexagon `height` high: it narrows from its middle row to half its width at its
 * top and bottom edges, where a `.grad` line sized for a box touched its slanted sides.
 * `charW`: the label's advance per character, model px.
 */
function hexagonWidth(lines: string[], height: number, charW: number): number {
  const font = 12 * scale; // graph-style.ts: 12 px type, 1.35 its line height
  const inkHalf = 0.35 * font; // a line's ink, less its leading and descenders
  let width = 0;
  lines.forEach((line, i) => {
    const fromMiddle = Math.abs(i - (lines.length - 1) / 2) * 1.35 * font + inkHalf;
    const left = Math.max(0.3, 1 - fromMiddle / height);
    width = Math.max(width, (line.length * charW + 12 * scale) / left); // 12: the borders (a running node's thicker) and a margin
  });
  return Math.round(width);
}

/** The widest `.grad` a leaf will read, its vectors by their norm when `byNorm`. */
function widestGrad(model: TraceModel, tensor: number, byNorm = false): string {
  let widest = "−00.0000";
  for (const acc of model.accumulationsOf(tensor)) {
    for (const v of [acc.before, acc.after]) {
      const text = v ? fmtShort(v, byNorm ? 1 : 2) : "";
      if (text.length > widest.length) widest = text;
    }
  }
  return widest;
}

export function buildGraph(model: TraceModel, options: BuildOptions): GraphElements {
  scale = options.fontScale ?? 1;
  const nodes: GNode[] = [];
  const edges: GEdge[] = [];
  const compact = model.nodes.size > (options.compactAbove ?? Infinity);
  const hidden = options.hidden ?? new Set<number>();
  // with nodes left out, the module groups left empty are too (a group holds its descendants')
  let usedPaths: Set<string> | null = null;
  let hiddenCount = 0;
  if (hidden.size) {
    usedPaths = new Set();
    for (const node of model.nodes.values()) {
      if (hidden.has(node.id)) hiddenCount++;
      else for (let path = node.module_path; path && !usedPaths.has(path); path = parentPath(path)) usedPaths.add(path);
    }
  }

  // The outermost collapsed group containing a module path, if any.
  const foldCache = new Map<string, string | null>();
  const folded = (path: string | null): string | null => {
    if (!path || !options.collapsed.size) return null;
    if (foldCache.has(path)) return foldCache.get(path)!;
    const parts = path.split(".");
    let hit: string | null = null;
    for (let i = 1; i <= parts.length && !hit; i++) {
      const p = parts.slice(0, i).join(".");
      if (options.collapsed.has(p)) hit = p;
    }
    foldCache.set(path, hit);
    return hit;
  };

  // Module groups (compound nodes) and collapsed groups (plain nodes).
  const members = new Map<string, number>();
  for (const node of model.nodes.values()) {
    if (hidden.has(node.id)) continue;
    const f = folded(node.module_path);
    if (f) members.set(f, (members.get(f) ?? 0) + 1);
  }
  for (const path of model.modulePaths) {
    const f = folded(path);
    if ((f && f !== path) || (usedPaths && !usedPaths.has(path))) continue;
    const parent = parentPath(path);
    if (f === path) {
      const count = members.get(path) ?? 0;
      const lines = [`▸ ${path}`, `${count} nodes`];
      nodes.push({ id: groupId(path), kind: "collapsed", label: lines.join("\n"), parent: parent ? groupId(parent) : null, op: null, path, count, ...size(lines, 110) });
    } else {
      nodes.push({ id: groupId(path), kind: "group", label: path, parent: parent ? groupId(parent) : null, op: null, path, width: 60, height: 30 });
    }
  }

  const idOfNode = (nodeId: number): string => {
    const f = folded(model.node(nodeId)?.module_path ?? null);
    return f ? groupId(f) : `n${nodeId}`;
  };
  const groupOf = (path: string | null | undefined): string | null => (path ? groupId(path) : null);

  const tensorNodes = new Map<number, GNode>();
  const addTensorNode = (id: number, kind: NodeKind, parent: string | null, op: number | null): GNode => {
    const existing = tensorNodes.get(id);
    if (existing) {
      if (existing.op !== null && (op === null || op < existing.op)) existing.op = op;
      return existing;
    }
    const lines = tensorNodeLabel(model, id);
    // Leaves show their .grad while stepping: leave room for the widest it will read
    // (a vector's `[−0.00148, −0.0042]` ran out of its hexagon), a short number at least.
    const room = kind === "input" ? lines : [...lines, `.grad ${widestGrad(model, id)}`];
    const dims = size(room, 80);
    if (kind !== "input") dims.width += 18;
    // a leaf's label is a point larger than an op's (graph-style.ts)
    if (kind === "leaf") dims.width = Math.max(dims.width, ellipseWidth(room, dims.height, CHAR_W * scale * (13 / 12)));
    // a parameter's hexagon is sized for its `.grad` by norm; a two-number vector is written
    // out only where it fits that hexagon's bottom row too (small_net's fc2.bias: it does not)
    let gradByNorm = false;
    if (kind === "param") {
      const byNorm = [...lines, `.grad ${widestGrad(model, id, true)}`];
      dims.width = Math.max(size(byNorm, 80).width + 18, hexagonWidth(byNorm, dims.height, CHAR_W * scale));
      gradByNorm = hexagonWidth(room, dims.height, CHAR_W * scale) > dims.width;
    }
    const n: GNode = { id: `t${id}`, kind, label: lines.join("\n"), parent, tensor: id, op, ...dims, ...(gradByNorm ? { gradByNorm } : {}) };
    tensorNodes.set(id, n);
    nodes.push(n);
    return n;
  };

  const seenEdges = new Set<string>();
  for (const node of model.nodes.values()) {
    if (hidden.has(node.id)) continue;
    const self = idOfNode(node.id);
    const isFolded = self !== `n${node.id}`;
    if (!isFolded) {
      const isAcc = node.name === "AccumulateGrad";
      let lines: string[];
      if (isAcc) lines = ["AccumulateGrad"];
      else if (compact) lines = [node.name];
      else if (node.tensor === null) {
        // made inside one op, no tensor of its own: what it computes when known (log_softmax(logits))
        const inner = innerExpr(model, node.id);
        const shape = model.nodeShape(node.id);
        lines = inner ? [node.name, `${inner} · ${shapeText(shape ?? undefined)}`] : [node.name];
      } else {
        const t = model.tensor(node.tensor);
        const made = madeByNodeText(model, node.id);
        const shapes = made ? shapesText((outputTensors(model, node.id) ?? []).map((o) => (o === null ? null : model.tensor(o)?.ev.shape))) : null;
        lines = [node.name, made ? `${made} · ${shapes}` : `${tensorExpr(model, node.tensor)} · ${shapeText(t?.ev.shape)}`];
      }
      nodes.push({
        id: self,
        kind: isAcc ? "acc" : "op",
        label: lines.join("\n"),
        parent: groupOf(node.module_path),
        node: node.id,
        op: node.op,
        ...size(lines),
      });
      if (isAcc && node.tensor !== null) {
        const t = model.tensor(node.tensor);
        const kind: NodeKind = t?.ev.is_param ? "param" : "leaf";
        const leaf = addTensorNode(node.tensor, kind, groupOf(node.module_path), node.op);
        edges.push({ id: `a${node.id}`, kind: "acc", source: self, target: leaf.id, label: ".grad" });
      }
    }
    node.edges.forEach((edge, slot) => {
      if (edge.node === null || !model.nodes.has(edge.node) || hidden.has(edge.node)) return;
      const target = idOfNode(edge.node);
      if (target === self) return;
      const key = isFolded || target.startsWith("g:") ? `${self}>${target}` : `e${node.id}-${slot}`;
      if (seenEdges.has(key)) return;
      seenEdges.add(key);
      const known = model.nodeShape(edge.node, edge.input_nr);
      // an unknown shape is left out rather than drawn as "?"
      const label = compact || !known ? "" : shapeText(known);
      edges.push({ id: key, kind: "grad", source: self, target, from: node.id, slot, label });
    });

    if (options.showSaved && !isFolded) {
      node.saved.forEach((saved, i) => {
        if (saved.tensor === null) return;
        const t = model.tensor(saved.tensor);
        if (!t) return;
        if (t.ev.is_leaf) {
          const kind: NodeKind = model.accumulatorOf(saved.tensor) !== undefined ? (t.ev.is_param ? "param" : "leaf") : "input";
          const tn = addTensorNode(saved.tensor, kind, kind === "input" ? null : groupOf(node.module_path), node.op);
          edges.push({ id: `v${node.id}-${i}`, kind: "saved", source: self, target: tn.id, label: "" });
        } else {
          const lines = [`saved ${saved.name}`, `${tensorExpr(model, saved.tensor)} · ${shapeText(saved.shape ?? t.ev.shape)}`];
          const chip: GNode = {
            id: `s${node.id}-${i}`,
            kind: "saved",
            label: lines.join("\n"),
            parent: groupOf(node.module_path),
            tensor: saved.tensor,
            owner: node.id,
            op: node.op,
            ...size(lines),
          };
          nodes.push(chip);
          edges.push({ id: `v${node.id}-${i}`, kind: "saved", source: self, target: chip.id, label: "" });
        }
      });
    }
  }
  return { nodes, edges, gradNodes: model.nodes.size - hiddenCount };
}
