// The server's HTTP API and the run event stream (a websocket that resumes where it left
// off: on reconnect it asks for the events after the last `seq` it saw).
import type { GradwalkEvent, GradwalkTrace } from "./types/events";

export interface Bootstrap {
  api: string;
  cuda: boolean;
  version: string;
  token_required: boolean;
}

export interface Example {
  id: string;
  title: string;
  summary: string;
  source: string;
  file: string;
}

export interface RunInfo {
  id: string;
  status: string;
  ws_url?: string;
  source?: string;
  device?: string;
  created_at?: string | number;
  event_count?: number;
}

/** Caps a run may ask for (the server bounds them): here, which optimizer steps are recorded in full. */
export interface RunLimits {
  detail_steps?: number;
  detail_every?: number;
}

export class ApiError extends Error {
  constructor(
    message: string,
    readonly status: number,
    readonly retryAfter: number | null = null,
  ) {
    super(message);
  }
}

const TOKEN_KEY = "gradwalk-token";

function detailText(detail: unknown): string {
  if (typeof detail === "string") return detail;
  if (Array.isArray(detail)) {
    return detail.map((d) => (d && typeof d === "object" && "msg" in d ? String((d as { msg: unknown }).msg) : JSON.stringify(d))).join("; ");
  }
  return JSON.stringify(detail);
}

export class Api {
  constructor(readonly base: string) {}

  get token(): string | null {
    try {
      return sessionStorage.getItem(TOKEN_KEY);
    } catch {
      return null;
    }
  }

  set token(value: string | null) {
    try {
      if (value) sessionStorage.setItem(TOKEN_KEY, value);
      else sessionStorage.removeItem(TOKEN_KEY);
    } catch {
      // storage disabled: the token lives for this page only
    }
  }

  /** A JSON request to the API with the token; a refusal becomes an ApiError with the server's reason. */
  async request<T>(path: string, init: RequestInit = {}): Promise<T> {
    const headers = new Headers(init.headers);
    if (init.body) headers.set("Content-Type", "application/json");
    const token = this.token;
    if (token) headers.set("Authorization", `Bearer ${token}`);
    const res = await fetch(`${this.base}${path}`, { ...init, headers });
    const text = await res.text();
    let body: unknown = null;
    try {
      body = text ? JSON.parse(text) : null;
    } catch {
      body = text;
    }
    if (!res.ok) {
      const detail = body && typeof body === "object" && "detail" in body ? detailText((body as { detail: unknown }).detail) : res.statusText;
      const retry = res.headers.get("Retry-After");
      throw new ApiError(detail || `HTTP ${res.status}`, res.status, retry ? Number(retry) : null);
    }
    return body as T;
  }

  health(): Promise<{ ok: boolean; cuda: boolean }> {
    return this.request("/health");
  }

  async examples(): Promise<Example[]> {
    const body = await this.request<{ examples: Example[] }>("/examples");
    return body.examples;
  }

  createRun(source: string, device: string, limits?: RunLimits): Promise<RunInfo> {
    return this.request("/runs", { method: "POST", body: JSON.stringify({ source, device, limits }) });
  }

  run(id: string): Promise<RunInfo> {
    return this.request(`/runs/${encodeURIComponent(id)}`);
  }

  trace(id: string): Promise<GradwalkTrace> {
    return this.request(`/runs/${encodeURIComponent(id)}/trace`);
  }

  cancel(id: string): Promise<unknown> {
    return this.request(`/runs/${encodeURIComponent(id)}/cancel`, { method: "POST" });
  }

  /** The websocket URL of a run's events, resuming after `after`. */
  eventsUrl(id: string, after: number, wsUrl?: string): string {
    const url = new URL(wsUrl ?? `${this.base}/runs/${encodeURIComponent(id)}/events`, location.href);
    if (url.protocol === "http:") url.protocol = "ws:";
    if (url.protocol === "https:") url.protocol = "wss:";
    if (after >= 0) url.searchParams.set("after", String(after));
    url.searchParams.set("batch", "1"); // several events a frame (NOTE [Websocket protocol] in server/routes/events.py)
    const token = this.token;
    if (token) url.searchParams.set("token", token);
    return url.href;
  }
}

export interface StreamHandlers {
  /** Events in order, batched per tick. */
  onEvents: (events: GradwalkEvent[]) => void;
  /** The stream ended for good: after run_finished, or when it could not be resumed. */
  onEnd: (reason: "finished" | "failed", message?: string) => void;
  /** The seq of the last event seen, so a reconnect resumes after it. */
  lastSeq: () => number;
}

const CANCEL = JSON.stringify({ command: "cancel" });

/** Follow a run's events over a websocket, reconnecting with ?after=<last seq> when dropped. */
export class RunStream {
  private ws: WebSocket | null = null;
  private queue: GradwalkEvent[] = [];
  private flushTimer = 0;
  private attempts = 0;
  /** The server said it is shutting down (close 1012): reconnecting keeps trying for ~2 minutes. */
  private restarting = false;
  private done = false;
  private finished = false;
  /** Whether the user asked to stop the run: said again on every reconnect until it ends. */
  private cancelAsked = false;

  constructor(
    private readonly api: Api,
    private readonly id: string,
    private readonly handlers: StreamHandlers,
    private readonly wsUrl?: string,
  ) {
    this.connect();
  }

  private connect(): void {
    const ws = new WebSocket(this.api.eventsUrl(this.id, this.handlers.lastSeq(), this.wsUrl));
    this.ws = ws;
    ws.onopen = () => {
      this.attempts = 0;
      // A cancel sent as the server dropped the socket (a viewer that fell behind is
      // closed with 1013) was never read: the run went on to its time limit.
      if (this.cancelAsked && !this.finished) ws.send(CANCEL);
    };
    ws.onmessage = (msg) => {
      let data: unknown;
      try {
        data = JSON.parse(String(msg.data));
      } catch {
        return;
      }
      // asked for with batch=1: a frame is an array of consecutive events
      for (const ev of Array.isArray(data) ? data : [data]) {
        if (!ev || typeof ev !== "object" || !("type" in ev)) continue;
        this.queue.push(ev as GradwalkEvent);
        if ((ev as GradwalkEvent).type === "run_finished") this.finished = true;
      }
      if (this.queue.length && !this.flushTimer) this.flushTimer = window.setTimeout(() => this.flush(), 16);
    };
    ws.onclose = (ev) => {
      this.flush();
      if (this.done) return;
      if (this.finished) {
        this.end("finished");
        return;
      }
      // 4xxx: the server refused (unknown run, no permission): do not retry.
      if (ev.code >= 4000 && ev.code < 5000) {
        this.end("failed", ev.reason || `the server closed the stream (${ev.code})`);
        return;
      }
      // 1012: the server is restarting (a few seconds to a minute): wait for it longer than for a fault
      if (ev.code === 1012) this.restarting = true;
      if (this.attempts >= (this.restarting ? 30 : 8)) {
        this.end("failed", "lost the connection to the server");
        return;
      }
      const delay = Math.min(5000, 250 * 2 ** this.attempts);
      this.attempts += 1;
      window.setTimeout(() => {
        if (!this.done) this.connect();
      }, delay);
    };
  }

  private flush(): void {
    clearTimeout(this.flushTimer);
    this.flushTimer = 0;
    if (!this.queue.length) return;
    const batch = this.queue;
    this.queue = [];
    this.handlers.onEvents(batch);
  }

  private end(reason: "finished" | "failed", message?: string): void {
    if (this.done) return;
    this.done = true;
    this.handlers.onEnd(reason, message);
  }

  /** Ask the server to cancel the run (over the socket when it is open, and again on each reconnect). */
  cancel(): void {
    this.cancelAsked = true;
    if (this.ws && this.ws.readyState === WebSocket.OPEN) this.ws.send(CANCEL);
    else void this.api.cancel(this.id).catch(() => undefined);
  }

  /** Stop following (the run goes on on the server). */
  close(): void {
    this.done = true;
    this.flush();
    this.ws?.close(1000);
  }
}
