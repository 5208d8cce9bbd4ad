// How often the graph is rebuilt while a run streams: each rebuild holds the page (Cytoscape
// works on the main thread), so the next one waits in proportion, and one that would hold
// it too long waits for the run's end. graph.ts asks; this keeps the record.

/** Above this many drawn nodes a graph is big (level of detail; see graph.ts). */
export const BIG = 1200;
/**
 * While a run streams, the next rebuild waits PACE times as long as the last one took (at
 * most PACE_MAX_MS): a graph of thousands of nodes takes a second or more to rebuild on a
 * slow laptop, and back-to-back rebuilds left the page no time to take events, clicks or
 * Stop (a 4,000-op loop took 17 s to show a 1.4 s run, with the page frozen for 5 s at a time).
 */
const PACE = 2;
const PACE_MAX_MS = 4000;
/**
 * While a run streams, a big graph whose next rebuild would hold the page longer than this
 * (its last rebuild's time, scaled by how much the graph has grown) is drawn when the run
 * ends instead: pacing leaves time between rebuilds, but one rebuild of 15,000 nodes held
 * the page for 15 s, and a Stop clicked meanwhile landed after the run's time limit.
 */
const LIVE_REBUILD_MAX_MS = 1000;

/** One rebuild: when it began, how long it took (ms), and whether it was paced. */
export interface Rebuild {
  began: number;
  ms: number;
  paced: boolean;
}

/** The graph's rebuilds so far, and what they say about the next one. */
export class RebuildPacer {
  /** The last rebuilds (at most 50), read by tests. */
  readonly log: Rebuild[] = [];
  private lastMs = 0;
  private lastNodes = 0;

  /** Forget the rebuilds (another run's graph). */
  reset(): void {
    this.lastMs = this.lastNodes = 0;
  }

  /** How long to wait before a rebuild asked for in `delay` ms; `paced` while a run streams. */
  wait(delay: number, paced: boolean): number {
    return paced ? Math.max(delay, Math.min(PACE_MAX_MS, PACE * this.lastMs)) : delay;
  }

  /** Whether rebuilding a graph of `nodes` nodes would hold the page too long while a run streams. */
  tooSlowForLive(nodes: number): boolean {
    // (a smaller graph's rebuild may have waited on ELK's worker: its time, scaled up, errs
    // on the side of waiting for the run's end)
    if (nodes <= BIG || !this.lastNodes) return false;
    return this.lastMs * (nodes / this.lastNodes) > LIVE_REBUILD_MAX_MS;
  }

  /** Note a rebuild of a graph of `nodes` nodes. */
  record(rebuild: Rebuild, nodes: number): void {
    this.lastMs = rebuild.ms;
    this.lastNodes = nodes;
    this.log.push(rebuild);
    if (this.log.length > 50) this.log.shift();
  }
}
