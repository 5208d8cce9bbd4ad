// The classroom room's wire side: its HTTP calls, the presenter's key, and the room socket
// (which reconnects on its own and hands every frame to its owner). The protocol is
// described once, in server/routes/rooms.py (NOTE [Room protocol]).
import { type Api, ApiError, type RunInfo, type RunLimits } from "./api";

export interface RoomState {
  source: string;
  run_id: string | null;
  view: string;
  step: number | null;
  op: number | null;
  allow_viewer_runs: boolean;
  lesson: string | null;
  /** The charts' y axes: auto, linear or log. */
  yscale: string;
  /** The charts' norms: together or per-parameter. */
  norms: string;
  /** The run drawn dashed under the shown one on the charts; null: none. */
  compare: string | null;
  /** The charts hidden, as chart ids separated by commas ("grad,lr"); "" for none (absent from an older server). */
  hide?: string;
  /** The backward() call whose graph alone is drawn, counted from 1 as links count them; "all": every call's; null: the run's default (absent from an older server). */
  call?: number | "all" | null;
  /** The node (`n12`) or tensor (`t3`) the presenter picked, as links write it; null: none (absent from an older server). */
  sel?: string | null;
}

export interface StateFrame {
  type: "state";
  version: number;
  source_version: number;
  /** Everything but `source` when this connection already has the source of `source_version`. */
  state: Omit<RoomState, "source"> & { source?: string };
}

/** To viewers: whether a presenter is connected (sent when none is, and when one is back). */
export interface PresenterFrame {
  type: "presence";
  version: number;
  presenter: boolean;
}

export type RoomFrame = StateFrame | { type: "ack"; version: number } | { type: "presence"; viewers: number } | PresenterFrame;

export interface RoomCreated {
  code: string;
  presenter_key: string;
  url: string;
  ws_url: string;
  version: number;
  state: RoomState;
  idle_s: number;
}

export interface RoomInfo {
  code: string;
  ws_url: string;
  url: string;
}

/** The room endpoints of the HTTP API. */
export class RoomApi {
  constructor(private readonly api: Api) {}

  private request<T>(path: string, init: RequestInit & { key?: string | null } = {}): Promise<T> {
    const headers = new Headers(init.headers);
    if (init.key) headers.set("X-Presenter-Key", init.key);
    return this.api.request<T>(path, { ...init, headers });
  }

  /** Whether room `code` is gone from the server (it ended or expired): only a 404 says so;
   * any other failure (offline, a token needed to view) is not taken for an answer. */
  async gone(code: string): Promise<boolean> {
    try {
      await this.request(`/rooms/${code}`);
      return false;
    } catch (err) {
      return err instanceof ApiError && err.status === 404;
    }
  }

  /** Open a room starting at `state`; `signal` abandons the wait (the server may still open it). */
  create(state: Partial<RoomState>, signal?: AbortSignal): Promise<RoomCreated> {
    return this.request("/rooms", { method: "POST", body: JSON.stringify({ state }), signal });
  }

  patch(code: string, key: string, patch: Partial<RoomState>): Promise<unknown> {
    return this.request(`/rooms/${code}/state`, { method: "PATCH", body: JSON.stringify(patch), key });
  }

  end(code: string, key: string): Promise<unknown> {
    return this.request(`/rooms/${code}`, { method: "DELETE", key });
  }

  /**
   * Run code in the room: as its presenter (with the key) or as a viewer. A refusal comes
   * back as a plain Error with the server's reason, so the app does not ask for its token.
   */
  async run(code: string, key: string | null, source: string, device: string, limits?: RunLimits): Promise<RunInfo> {
    try {
      return await this.request<RunInfo>(`/rooms/${code}/runs`, { method: "POST", body: JSON.stringify({ source, device, limits }), key });
    } catch (err) {
      if (err instanceof ApiError && err.status === 403) throw new Error(`${err.message}. Ask them to tick “Viewers may run code”.`);
      throw err;
    }
  }
}

// --- the presenter's key ------------------------------------------------------------------
// The tab that opened a room holds its key in sessionStorage, so only that tab presents
// (another tab of the same browser is a viewer). localStorage keeps a copy so that the
// Classroom dialog can offer to resume presenting after the tab was closed.

const TAB_KEY = "gradwalk-room-key:";
const SAVED = "gradwalk-rooms";

/** A room this browser opened, with its presenter key (for resuming). */
export interface SavedRoom {
  code: string;
  key: string;
  at: number;
}

function savedRooms(): SavedRoom[] {
  try {
    const list = JSON.parse(localStorage.getItem(SAVED) ?? "[]") as SavedRoom[];
    return Array.isArray(list) ? list.filter((r) => r && typeof r.code === "string" && typeof r.key === "string") : [];
  } catch {
    return [];
  }
}

export const presenterKeys = {
  /** The key this tab presents `code` with, if it does. */
  get(code: string): string | null {
    try {
      return sessionStorage.getItem(TAB_KEY + code);
    } catch {
      return null;
    }
  },
  /** Present `code` from this tab (and remember the key for resuming). */
  set(code: string, key: string): void {
    try {
      sessionStorage.setItem(TAB_KEY + code, key);
      const list = [{ code, key, at: Date.now() }, ...savedRooms().filter((r) => r.code !== code)].slice(0, 5);
      localStorage.setItem(SAVED, JSON.stringify(list));
    } catch {
      // storage disabled: presenting lasts as long as this page
    }
  },
  forget(code: string): void {
    try {
      sessionStorage.removeItem(TAB_KEY + code);
      localStorage.setItem(SAVED, JSON.stringify(savedRooms().filter((r) => r.code !== code)));
    } catch {
      // nothing stored
    }
  },
  /** Rooms this browser opened recently, newest first. */
  saved(): SavedRoom[] {
    return savedRooms();
  },
};

/** Read a typed code the way the server does: any case, spaces and dashes ignored. */
export function normalizeCode(text: string): string | null {
  const code = text.trim().replace(/[\s-]/g, "").toUpperCase();
  return /^[23456789ABCDEFGHJKMNPQRSTUVWXYZ]{6}$/.test(code) ? code : null;
}

/** "K7MQ2X" -> "K7M Q2X": easier to read off a projector. */
export function spacedCode(code: string): string {
  return `${code.slice(0, 3)} ${code.slice(3)}`;
}

// --- the socket -----------------------------------------------------------------------------

export type SocketStatus = "connecting" | "live" | "reconnecting" | "ended";

export interface SocketHandlers {
  onFrame: (frame: RoomFrame) => void;
  onStatus: (status: SocketStatus, reason?: string) => void;
}

/** A room websocket that reconnects until the server says the room is gone (4xxx). */
export class RoomSocket {
  private ws: WebSocket | null = null;
  private attempts = 0;
  private done = false;
  private retry = 0;

  constructor(
    private readonly url: () => string,
    private readonly handlers: SocketHandlers,
  ) {
    this.connect();
    // The browser knows it is offline before the socket does (a lost Wi-Fi leaves it open for
    // a minute): a viewer 50 s offline read "● live · Following the presenter" on a stale
    // step. Offline, it says so and drops the socket; online, it connects again at once.
    window.addEventListener("offline", () => {
      if (this.done) return;
      this.handlers.onStatus("reconnecting", "this device is offline");
      this.ws?.close();
    });
    window.addEventListener("online", () => {
      if (this.done || this.open || this.ws?.readyState === WebSocket.CONNECTING) return;
      window.clearTimeout(this.retry);
      this.attempts = 0;
      this.connect();
    });
  }

  get open(): boolean {
    return this.ws !== null && this.ws.readyState === WebSocket.OPEN;
  }

  send(message: unknown): boolean {
    if (!this.open) return false;
    this.ws!.send(JSON.stringify(message));
    return true;
  }

  close(): void {
    this.done = true;
    this.ws?.close(1000);
  }

  private connect(): void {
    this.handlers.onStatus(this.attempts ? "reconnecting" : "connecting");
    const ws = new WebSocket(this.url());
    this.ws = ws;
    ws.onopen = () => {
      this.attempts = 0;
      this.handlers.onStatus("live");
    };
    ws.onmessage = (msg) => {
      let frame: RoomFrame;
      try {
        frame = JSON.parse(String(msg.data)) as RoomFrame;
      } catch {
        return;
      }
      if (frame && typeof frame === "object" && "type" in frame) this.handlers.onFrame(frame);
    };
    ws.onclose = (ev) => {
      if (this.done || ws !== this.ws) return;
      // 4xxx: the server refused or ended the room; 4429 (full) is worth another try later.
      if (ev.code >= 4000 && ev.code < 5000 && ev.code !== 4429) {
        this.done = true;
        this.handlers.onStatus("ended", ev.reason || `the server closed the room (${ev.code})`);
        return;
      }
      const delay = ev.code === 1013 ? 0 : Math.min(5000, 250 * 2 ** this.attempts) + Math.random() * 250;
      this.attempts += 1;
      this.handlers.onStatus("reconnecting", ev.reason || (navigator.onLine ? undefined : "this device is offline"));
      this.retry = window.setTimeout(() => {
        if (!this.done) this.connect();
      }, delay);
    };
  }
}

/** The websocket URL of a room, for a role. */
export function roomSocketUrl(info: RoomInfo, role: "viewer" | "presenter", key: string | null, token: string | null): string {
  const url = new URL(info.ws_url, location.href);
  url.protocol = url.protocol === "https:" ? "wss:" : "ws:";
  url.searchParams.set("role", role);
  if (key) url.searchParams.set("key", key);
  if (token) url.searchParams.set("token", token);
  return url.href;
}
