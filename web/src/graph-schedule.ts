// When the graph view rebuilds: a request starts a short timer that the requests after it
// ride along on, a request during a rebuild queues one more after it, and a sooner request
// replaces a later pending one. graph-pacing.ts says how long a rebuild waits while a run
// streams; graph.ts does the rebuild, marking its start and end here (begin, end) and the
// layout it applied (laidOut), which whoever waits for it (whenLaidOut) gets.
import type { LayoutInfo } from "./graph-layout";
import { type Rebuild, RebuildPacer } from "./graph-pacing";

/** What the scheduler asks of the graph view. */
export interface Rebuildable {
  /** Whether the run drawn has finished (rebuilds are paced only while it streams). */
  finished(): boolean;
  /** How many grad_fn nodes the graph has, drawn or not. */
  nodeCount(): number;
  /** Rebuild and lay out the graph, between `begin()` and `end()`; `paced`: while the run streams. */
  rebuild(paced: boolean): Promise<void>;
  /** Say that the graph, too big to redraw while its run streams, is drawn when the run ends. */
  holdUntilRunEnds(): void;
}

/** A rebuild under way: when it began, when the graph first needed it, and whether it was paced. */
export interface RebuildRun {
  began: number;
  started: number;
  paced: boolean;
}

export class RebuildScheduler {
  /** Whether a rebuild is under way (tests and bench_web.py read it, and `pending` and `timer`). */
  private running = false;
  /** Whether another rebuild was asked for during this one. */
  private pending = false;
  private timer = 0;
  /** When the pending timer fires (performance.now()). */
  private timerDue = 0;
  private dirtySince = 0;
  private readonly pacer = new RebuildPacer();
  private waiters: ((info: LayoutInfo) => void)[] = [];

  constructor(private readonly view: Rebuildable) {}

  /** The last rebuilds, for tests: when each began, how long it took, and whether it was paced. */
  get log(): readonly Rebuild[] {
    return this.pacer.log;
  }

  /** Whether a rebuild or layout is pending or running. */
  get busy(): boolean {
    return this.running || this.pending || this.timer !== 0;
  }

  /** Forget how long the rebuilds took (another run's graph). */
  reset(): void {
    this.pacer.reset();
  }

  /**
   * Rebuild and re-layout soon. While a run streams, events arrive in bursts: the first
   * one starts a short timer and the rest ride along; events arriving during a layout
   * queue one more layout after it. So a small live graph updates several times a second,
   * and a big one as often as leaves the page responsive (graph-pacing.ts). A sooner request (0: the
   * user asked; the run finished) replaces a later pending one.
   */
  schedule(delay = 80): void {
    if (!this.dirtySince) this.dirtySince = performance.now();
    if (this.running) {
      this.pending = true;
      return;
    }
    const paced = delay > 0 && !this.view.finished();
    if (paced && this.tooBigToRedrawLive()) {
      this.view.holdUntilRunEnds();
      return;
    }
    const wait = this.pacer.wait(delay, paced);
    const due = performance.now() + wait;
    if (this.timer && this.timerDue <= due) return;
    clearTimeout(this.timer);
    this.timerDue = due;
    this.timer = window.setTimeout(() => {
      this.timer = 0;
      // (a run that finished while this waited is drawn whole now: not a paced rebuild)
      void this.view.rebuild(paced && !this.view.finished());
    }, wait);
  }

  /** Whether the next rebuild of a big graph would hold the page too long while a run streams. */
  private tooBigToRedrawLive(): boolean {
    // (by the whole graph's size, drawn or not: a window on a growing graph is new nodes each time)
    return this.pacer.tooSlowForLive(this.view.nodeCount());
  }

  /** Mark the start of a rebuild; pass what it returns to `end` when the rebuild ends, however it ends. */
  begin(paced: boolean): RebuildRun {
    this.running = true;
    this.pending = false;
    const began = performance.now();
    const started = this.dirtySince || began;
    this.dirtySince = 0;
    return { began, started, paced };
  }

  /** Resolve after the next layout has been applied. */
  whenLaidOut(): Promise<LayoutInfo> {
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  /** A rebuild applied layout `info`: hand it to those waiting (whenLaidOut). */
  laidOut(info: LayoutInfo): void {
    const waiters = this.waiters;
    this.waiters = [];
    for (const w of waiters) w(info);
  }

  /** Mark the end of rebuild `run`: note how long it took, and start the one queued meanwhile. */
  end(run: RebuildRun): void {
    this.running = false;
    this.pacer.record({ began: run.began, ms: performance.now() - run.began, paced: run.paced }, this.view.nodeCount());
    if (this.pending) this.schedule(this.view.finished() ? 0 : 40);
  }
}
