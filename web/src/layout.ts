// Layered layout of the grad_fn graph with ELK (elkjs), run in a web worker so the page
// stays interactive while it works. Module groups become ELK compound nodes.
//
// ELK's layered algorithm takes seconds on thousands of nodes, so graphs above
// ELK_MAX_NODES are laid out by the caller with Cytoscape's breadth-first layout instead
// (see graph.ts: level of detail).
import ELK from "elkjs/lib/elk-api.js";
import type { ElkExtendedEdge, ElkNode } from "elkjs/lib/elk-api.js";
import { orderRepeats } from "./layout-order";

export const ELK_MAX_NODES = 600;

export interface LayoutNode {
  id: string;
  parent: string | null;
  width: number;
  height: number;
  /** Compound nodes (module groups) get their size from their children. */
  compound: boolean;
}

export interface LayoutEdge {
  id: string;
  source: string;
  target: string;
  /** An edge the gradient runs along: ELK keeps it straight before the others (STRAIGHT). */
  straight?: boolean;
}

/** Top-left positions are ELK's; these are centres, in graph coordinates. */
export type Positions = Map<string, { x: number; y: number }>;

/**
 * Each edge's line as ELK routed it, in graph coordinates: where it leaves its source's box,
 * where it bends, where it meets its target's box.
 */
export type Routes = Map<string, { x: number; y: number }[]>;

/** What ELK worked out: where each node goes and how each edge runs between the others. */
export interface Placement {
  positions: Positions;
  routes: Routes;
}

// Spacing between nodes and layers: ELK reads it from each node's own options, so module
// groups carry it too (without it the layers inside a group were 18 px apart, too close
// for the gradient labelled on the edge between them).
const SPACING: Record<string, string> = {
  "elk.layered.spacing.nodeNodeBetweenLayers": "46",
  "elk.spacing.nodeNode": "28",
  "elk.layered.spacing.edgeNodeBetweenLayers": "18",
};

const OPTIONS: Record<string, string> = {
  "elk.algorithm": "layered",
  "elk.direction": "DOWN",
  "elk.hierarchyHandling": "INCLUDE_CHILDREN",
  ...SPACING,
  "elk.layered.nodePlacement.strategy": "BRANDES_KOEPF",
  "elk.layered.considerModelOrder.strategy": "NODES_AND_EDGES",
  "elk.padding": "[top=40,left=20,bottom=20,right=20]",
  "elk.edgeRouting": "POLYLINE",
};

/**
 * The gradient's edges are kept straight before the saved tensors' dotted ones: an MLP's
 * MseLossBackward0 had been placed above its own saved `self` chip, right of the network,
 * with its one gradient edge running 870 px left to the AddmmBackward0 it feeds, so the first
 * view (the loss, where the walk starts) showed the loss and an empty module box.
 */
const STRAIGHT: Record<string, string> = { "elk.layered.priority.straightness": "10" };

/**
 * A node with more edges than this on one side (250 iterations of `y = x * 2` all sending
 * their gradient to one AccumulateGrad) is laid out without model order: ELK's crossing
 * minimisation with model order grows with the cube of such a fan (250 edges into one node
 * took 3-7 s, past the layout's budget; without it, 0.2 s), and a fan that wide has no
 * order worth keeping.
 */
export const MODEL_ORDER_MAX_FAN = 40;

/** The most edges into or out of one node among `edges`. */
export function widestFan(edges: readonly LayoutEdge[]): number {
  const count = new Map<string, number>();
  let widest = 0;
  for (const e of edges) {
    for (const end of [`>${e.target}`, `<${e.source}`]) {
      const n = (count.get(end) ?? 0) + 1;
      count.set(end, n);
      if (n > widest) widest = n;
    }
  }
  return widest;
}

// A module group's box: Cytoscape draws it 14 px around its children with the module's
// name just above it (graph-style.ts), so ELK keeps that much room around each group, the
// name's included, clear of the nodes beside it.
const GROUP_OPTIONS: Record<string, string> = { ...SPACING, "elk.padding": "[top=40,left=14,bottom=14,right=14]" };

let elk: InstanceType<typeof ELK> | null = null;
let unavailable = false;
let makeWorker: (() => Worker) | null = null;
/** Layouts waiting on the worker: rejected at once if the worker dies (a blocked script). */
const waiting = new Set<(err: Error) => void>();

function workerUrl(): string {
  // with the bundle's own ?v=..., so the worker is cached, and replaced, with the bundle
  return new URL(`./elk-worker.js${new URL(import.meta.url).search}`, import.meta.url).href;
}

/**
 * Run ELK in workers made by `factory` (a page with the worker's code inline, such as a
 * self-contained export, makes them from a blob) instead of from `elk-worker.js` beside
 * this bundle.
 */
export function useElkWorker(factory: () => Worker): void {
  makeWorker = factory;
  elk = null;
  unavailable = false;
}

function engine(): InstanceType<typeof ELK> | null {
  if (elk || unavailable) return elk;
  try {
    const url = makeWorker ? "inline" : workerUrl();
    const make = makeWorker ?? (() => new Worker(url));
    const workerFactory = () => {
      const worker = make();
      worker.addEventListener("error", () => {
        // The worker could not start: lay out without it from now on.
        unavailable = true;
        elk = null;
        for (const reject of waiting) reject(new Error("the ELK worker failed"));
        waiting.clear();
      });
      return worker as unknown as never;
    };
    elk = new ELK({ workerFactory, workerUrl: url });
  } catch {
    // No workers here (a page opened from file://): the caller falls back to breadth-first.
    unavailable = true;
  }
  return elk;
}

/** Start the worker and lay out a tiny graph, so the first real layout is not a cold start. */
export function warmElk(): void {
  if (!engine()) return;
  layoutElk([{ id: "a", parent: null, width: 10, height: 10, compound: false }], []).catch(() => undefined);
}

/** Say whether the ELK worker can be used on this page. */
export function elkAvailable(): boolean {
  return engine() !== null;
}

/**
 * Lay out nodes (with module groups as compounds) and edges; resolve with node centres and
 * edge routes.
 * A layout still running after `budgetMs` is abandoned (its worker is stopped, a fresh one
 * serves the next call) and the promise rejects, so the caller can fall back: a live graph
 * must not wait on ELK working through a big intermediate graph.
 */
export async function layoutElk(nodes: LayoutNode[], edges: LayoutEdge[], budgetMs = 5000): Promise<Placement> {
  const e = engine();
  if (!e) throw new Error("ELK is not available on this page");
  const elkNodes = new Map<string, ElkNode>();
  for (const n of nodes) {
    elkNodes.set(
      n.id,
      n.compound ? { id: n.id, children: [], layoutOptions: GROUP_OPTIONS } : { id: n.id, width: n.width, height: n.height },
    );
  }
  const options = widestFan(edges) > MODEL_ORDER_MAX_FAN ? { ...OPTIONS, "elk.layered.considerModelOrder.strategy": "NONE" } : OPTIONS;
  const root: ElkNode = { id: "__root", layoutOptions: options, children: [], edges: [] };
  for (const n of nodes) {
    const parent = n.parent ? elkNodes.get(n.parent) : undefined;
    (parent ?? root).children!.push(elkNodes.get(n.id)!);
  }
  // Empty groups confuse ELK: give them a size.
  for (const n of nodes) {
    const en = elkNodes.get(n.id)!;
    if (n.compound && !en.children!.length) {
      delete en.children;
      en.width = n.width;
      en.height = n.height;
    }
  }
  root.edges = edges
    .filter((x) => elkNodes.has(x.source) && elkNodes.has(x.target) && x.source !== x.target)
    .map((x): ElkExtendedEdge => ({ id: x.id, sources: [x.source], targets: [x.target], ...(x.straight ? { layoutOptions: STRAIGHT } : {}) }));
  const result = await new Promise<ElkNode>((resolve, reject) => {
    waiting.add(reject);
    const timer = setTimeout(() => {
      e.terminateWorker();
      if (elk === e) elk = null;
      reject(new Error(`ELK took more than ${budgetMs} ms`));
    }, budgetMs);
    e.layout(root)
      .then(resolve, reject)
      .finally(() => {
        clearTimeout(timer);
        waiting.delete(reject);
      });
  });
  const positions: Positions = new Map();
  // each node's top-left in graph coordinates: an edge's points are relative to its container
  const corners = new Map<string, { x: number; y: number }>([[result.id, { x: 0, y: 0 }]]);
  const walk = (node: ElkNode, ox: number, oy: number) => {
    for (const child of node.children ?? []) {
      const x = ox + (child.x ?? 0);
      const y = oy + (child.y ?? 0);
      corners.set(child.id, { x, y });
      if (!child.children?.length) positions.set(child.id, { x: x + (child.width ?? 0) / 2, y: y + (child.height ?? 0) / 2 });
      walk(child, x, y);
    }
  };
  walk(result, 0, 0);
  const placement = { positions, routes: routesOf(result.edges ?? [], corners) };
  orderRepeats(nodes, edges, placement);
  return placement;
}

/** The routes of `edges` (ELK's output), moved from their containers into graph coordinates. */
function routesOf(edges: ElkExtendedEdge[], corners: Map<string, { x: number; y: number }>): Routes {
  const routes: Routes = new Map();
  for (const edge of edges) {
    const at = corners.get(edge.container ?? "__root") ?? { x: 0, y: 0 };
    const points = (edge.sections ?? []).flatMap((s) => [s.startPoint, ...(s.bendPoints ?? []), s.endPoint]);
    if (points.length) routes.set(edge.id, points.map((p) => ({ x: at.x + p.x, y: at.y + p.y })));
  }
  return routes;
}
