// The app's run controls: ▶ Run, Stop and the run's status beside them (ready, running…,
// finished, …), with the status also on the app's root (data-run) for the page's styles.
// app.ts starts and stops the runs and says here where they are (setStatus); ▶ Run is off
// while one starts or runs, and while runs are blocked (block: a room's viewer).
import { type Api, ApiError } from "./api";
import { $ } from "./dom";
import { STATUS_WORDS } from "./output";

/** Where the run shown is: before and during it, or how it ended (a run_finished status). */
export type RunState = "idle" | "starting" | "running" | "ok" | "error" | "timeout" | "cancelled" | "crashed" | "limit";

export class RunControls {
  readonly runButton: HTMLButtonElement;
  private readonly runButtonTitle: string;
  private readonly stopButton: HTMLButtonElement;
  private readonly statusEl: HTMLElement;
  /** Why ▶ Run is off though no run is going (a room where only the presenter runs code), or null. */
  private reason: string | null = null;

  /** Find the controls under `root` (the app's); their clicks call `run` and `stop`. */
  constructor(
    private readonly root: HTMLElement,
    run: () => void,
    stop: () => void,
  ) {
    this.runButton = $(root, "[data-gw=run]");
    this.runButtonTitle = this.runButton.title;
    this.stopButton = $(root, "[data-gw=stop]");
    this.statusEl = $(root, "[data-gw=status]");
    this.runButton.addEventListener("click", run);
    this.stopButton.addEventListener("click", stop);
  }

  /** Why runs are blocked (see block), or null. */
  get blocked(): string | null {
    return this.reason;
  }

  /** Turn ▶ Run off for `reason`, shown as its tooltip, or back on with `null`. */
  block(reason: string | null): void {
    if (reason === this.reason) return;
    this.reason = reason;
    this.runButton.title = reason ?? this.runButtonTitle;
    this.runButton.disabled = this.busy || reason !== null;
  }

  /** Whether a run is starting or running (the status shown says so). */
  private get busy(): boolean {
    const state = this.statusEl.dataset.state;
    return state === "starting" || state === "running";
  }

  /** Show `state` (a RunState, "cut-short" for a trace that ends before its run did, or any other status as it is). */
  setStatus(state: RunState | string): void {
    const labels: Record<string, string> = {
      idle: "ready",
      starting: "starting…",
      running: "running…",
      "cut-short": "cut short",
      ...STATUS_WORDS,
    };
    const focused = document.activeElement;
    this.statusEl.textContent = labels[state] ?? state;
    this.statusEl.dataset.state = state;
    const busy = this.busy;
    this.runButton.disabled = busy || this.reason !== null;
    this.stopButton.disabled = !busy;
    this.root.dataset.run = state;
    this.keepFocus(focused);
  }

  /**
   * A keyboard user's focus goes where the button they pressed went: ▶ Run (Enter) is off
   * while its run goes, and Stop is what they can press then; Stop, off once the run ended,
   * hands it back to ▶ Run. (A button that goes off drops its focus to the page's body,
   * where no ring shows it: after Enter on ▶ Run the focus was nowhere to be seen.)
   */
  private keepFocus(focused: Element | null): void {
    if (focused === this.runButton && this.runButton.disabled && !this.stopButton.disabled) this.stopButton.focus();
    else if (focused === this.stopButton && this.stopButton.disabled && !this.runButton.disabled) this.runButton.focus();
  }
}

/**
 * Say (with `say`) why a run did not start: the server busy (429), or wanting its access
 * token (401/403), which is asked for at once and, given, runs the code again (`retry`; ▶ Run
 * had to be pressed again), in a learner's words, not the header the server names.
 */
export function explainRunFailure(err: unknown, api: Api, say: (text: string) => void, retry: () => void): void {
  if (err instanceof ApiError && err.status === 429) {
    const wait = err.retryAfter ? ` in ${err.retryAfter} s` : " in a moment";
    say(`The server is busy: try again${wait}. (${err.message})`);
  } else if (err instanceof ApiError && (err.status === 401 || err.status === 403)) {
    const refused = api.token !== null;
    say(refused ? "The server did not take that access token: press ▶ Run to give it again." : "This server runs code only with its access token (whoever started the server has it): press ▶ Run to give it.");
    const token = window.prompt(refused ? "That token was not accepted. Access token for this gradwalk server" : "Access token for this gradwalk server")?.trim();
    if (!token) return;
    api.token = token;
    retry();
  } else if (err instanceof TypeError) {
    // fetch's own failure ("Failed to fetch"): no answer at all, the server stopped or the network down
    say("Could not reach the gradwalk server — is it still running? Your code is kept; press ▶ Run again once it is back.");
  } else {
    say(`Could not start the run: ${(err as Error).message}`);
  }
}
