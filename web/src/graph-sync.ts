// Bring Cytoscape's elements in line with what graph-build.ts (and graph-window.ts) built,
// touching only what changed: a live graph grows by a few nodes at a time, and re-adding
// thousands of elements would cost a full restyle each time.
import type { Core, ElementDefinition } from "cytoscape";
import type { GEdge, GNode, GraphElements } from "./graph-build";

// NOTE [Nothing drawn before it is placed]: an element added here is "unplaced" (not drawn)
// until the layout that places it ends (graph.ts). Drawn at once, a live graph's new nodes
// all sat at (0, 0) while the layout ran in its worker: on a busy machine a frame came in
// between, and Cytoscape warned of each edge between two of them ("Edge ... has invalid
// endpoints", its ends inside each other), as a CI run caught.

/**
 * Make `cy` hold exactly `built`'s elements; `drawn` maps each element id in `cy` to what
 * it was built from, and is kept up to date. `forget(id)` is called for each element removed
 * or relabelled (the step painter caches per element). Says whether the structure changed
 * (elements added or removed, a node resized or moved to another group): then the graph
 * must be laid out again.
 */
export function syncElements(cy: Core, drawn: Map<string, GNode | GEdge>, built: GraphElements, forget: (id: string) => void): boolean {
  const { nodes, edges } = built;
  const want = new Map<string, GNode | GEdge>();
  for (const n of nodes) want.set(n.id, n);
  for (const e of edges) want.set(e.id, e);
  let structural = false;
  cy.batch(() => {
    for (const [id, old] of drawn) {
      const next = want.get(id);
      if (!next || ("parent" in old && "parent" in next && old.parent !== next.parent)) {
        cy.getElementById(id).remove();
        drawn.delete(id);
        forget(id);
        structural = true;
      }
    }
    const add: ElementDefinition[] = [];
    // Parents before children: groups were pushed first by buildGraph.
    for (const n of nodes) {
      const old = drawn.get(n.id) as GNode | undefined;
      if (!old) {
        // pannable: a drag begun on a node (or a module's box) pans the graph, as on the background
        add.push({ group: "nodes", data: { ...n, parent: n.parent ?? undefined, base: n.label }, classes: "unplaced", pannable: true });
        structural = true;
      } else if (old.label !== n.label || old.width !== n.width || old.height !== n.height || old.op !== n.op) {
        cy.getElementById(n.id).data({ label: n.label, base: n.label, width: n.width, height: n.height, op: n.op });
        if (old.width !== n.width || old.height !== n.height) structural = true;
      }
      drawn.set(n.id, n);
    }
    for (const e of edges) {
      const old = drawn.get(e.id) as GEdge | undefined;
      if (!old) {
        add.push({ group: "edges", data: { ...e, shape: e.label }, classes: "unplaced" });
        structural = true;
      } else if (old.label !== e.label) {
        cy.getElementById(e.id).data({ shape: e.label });
        forget(e.id);
      }
      drawn.set(e.id, e);
    }
    if (add.length) cy.add(add);
  });
  return structural;
}
