// Level of detail for big graphs: which module groups to fold, and how to size the
// breadth-first layout that replaces ELK past a few hundred nodes.
import { type GEdge, neighbours } from "./graph-build";
import type { TraceModel } from "./trace-model";

/** The deepest module level whose folding brings the graph under `limit` nodes. */
export function foldToFit(model: TraceModel, limit: number): Set<string> {
  const paths = [...model.modulePaths];
  if (!paths.length) return new Set();
  const depth = (p: string) => p.split(".").length;
  const maxDepth = Math.max(...paths.map(depth));
  const perPath = new Map<string, number>();
  let loose = 0;
  for (const node of model.nodes.values()) {
    if (node.module_path) perPath.set(node.module_path, (perPath.get(node.module_path) ?? 0) + 1);
    else loose++;
  }
  let chosen = new Set<string>();
  for (let d = maxDepth; d >= 1; d--) {
    chosen = new Set(paths.filter((p) => depth(p) === d));
    let count = loose + chosen.size;
    for (const [p, c] of perPath) if (depth(p) < d) count += c;
    if (count <= limit) break;
  }
  return chosen;
}

/** How many breadth-first levels a graph has from its roots, and the most nodes on one. */
export function levelCounts(roots: string[], edges: GEdge[]): { levels: number; widest: number } {
  const out = neighbours(edges, "out");
  const seen = new Set(roots);
  let frontier = roots;
  let levels = 0;
  let widest = 1;
  while (frontier.length) {
    levels += 1;
    widest = Math.max(widest, frontier.length);
    const next: string[] = [];
    for (const id of frontier) {
      for (const t of out.get(id) ?? []) {
        if (!seen.has(t)) {
          seen.add(t);
          next.push(t);
        }
      }
    }
    frontier = next;
  }
  return { levels, widest };
}
