// The Classroom dialog: start presenting (open a room with what the app shows now), resume
// a room this browser opened, or join a presenter's room by its code.
import { ApiError } from "./api";
import type { App } from "./app";
import { h } from "./dom";
import type { LessonsGallery } from "./lessons";
import { normalizeCode, presenterKeys, RoomApi, type SavedRoom, spacedCode } from "./room-client";
import { callNumber, chartChoiceWords, selectionText } from "./url-state";

/** How long Start a room waits for the server before it says so and lets the teacher try again. */
const ROOM_START_TIMEOUT_MS = 20_000;

/** A signal that aborts with a "TimeoutError" after `ms` (by setTimeout, so a page's clock governs it). */
function timeoutSignal(ms: number): AbortSignal {
  const abort = new AbortController();
  setTimeout(() => abort.abort(new DOMException(`no answer within ${ms} ms`, "TimeoutError")), ms);
  return abort.signal;
}

export class ClassroomDialog {
  private readonly dialog: HTMLDialogElement;
  private readonly error: HTMLElement;
  private readonly resume: HTMLElement;
  /** "You are in room K7M Q2X…", shown when the dialog is opened from inside a room. */
  private readonly here: HTMLElement;
  private readonly codeInput: HTMLInputElement;
  private readonly startButton: HTMLButtonElement;
  private readonly rooms: RoomApi;
  /** Counts the listings of the rooms to resume: a listing overtaken by a newer one is dropped. */
  private listing = 0;
  /** The rooms found ended since the dialog opened, said where their buttons were. */
  private ended: string[] = [];

  constructor(
    private readonly app: App,
    private readonly lessons: LessonsGallery,
  ) {
    this.rooms = new RoomApi(app.api);
    this.error = h("p", { class: "gw-dialog-error", role: "alert", hidden: true });
    this.resume = h("div", { class: "gw-room-resume" });
    this.here = h("p", { class: "gw-room-here", role: "status", hidden: true, data: { gw: "room-here" } });
    this.startButton = h("button", { type: "button", class: "gw-btn gw-btn-primary", text: "Start a room", data: { gw: "room-start" }, on: { click: () => void this.start() } });
    this.codeInput = h("input", {
      id: "gw-room-code-input",
      class: "gw-room-code-input",
      autocomplete: "off",
      autocapitalize: "characters",
      spellcheck: "false",
      maxlength: "12",
      placeholder: "K7M Q2X",
      "aria-label": "Room code",
      data: { gw: "room-code-input" },
    });
    const joinForm = h(
      "form",
      {
        class: "gw-room-join-form",
        on: {
          submit: (ev) => {
            ev.preventDefault();
            this.join();
          },
        },
      },
      this.codeInput,
      h("button", { type: "submit", class: "gw-btn gw-btn-primary", text: "Join", data: { gw: "room-join" } }),
    );
    this.dialog = h(
      "dialog",
      { class: "gw-dialog gw-classroom-dialog", "aria-labelledby": "gw-classroom-title" },
      h(
        "div",
        { class: "gw-dialog-head" },
        h("h2", { id: "gw-classroom-title", text: "Classroom" }),
        h("button", { type: "button", class: "gw-btn", "aria-label": "Close", text: "✕", on: { click: () => this.dialog.close() } }),
      ),
      this.here,
      h(
        "section",
        { class: "gw-classroom-part" },
        h("h3", { text: "Present to a class" }),
        h("p", { text: "Open a room and give your class its code. Everyone follows your code, runs and backward steps live on their own screen, and can wander off to explore and snap back. Only you run code unless you allow viewers to." }),
        this.startButton,
        this.resume,
      ),
      h(
        "section",
        { class: "gw-classroom-part" },
        h("h3", {}, h("label", { for: "gw-room-code-input", text: "Join a class" })),
        h("p", { text: "Type the six-character code your presenter shows." }),
        joinForm,
      ),
      this.error,
    );
    this.dialog.addEventListener("click", (ev) => {
      if (ev.target === this.dialog) this.dialog.close();
    });
    app.root.append(this.dialog);
  }

  open(): void {
    this.error.hidden = true;
    this.ended = [];
    this.renderHere();
    void this.renderResume();
    if (!this.dialog.open) this.dialog.showModal();
    this.codeInput.focus();
  }

  private fail(message: string): void {
    this.error.textContent = message;
    this.error.hidden = false;
  }

  private join(): void {
    const code = normalizeCode(this.codeInput.value);
    if (!code) {
      this.fail("A room code is six letters and digits, like K7M Q2X.");
      return;
    }
    location.assign(`/room/${code}`);
  }

  /** Open a room that starts with what the app shows now, then present it from this tab. */
  private async start(): Promise<void> {
    const app = this.app;
    const s = app.store.state;
    // everything a link to this view carries: the graph's call, the pick, the charts' choices
    const state = {
      source: app.editor.source,
      run_id: app.runId,
      view: s.view,
      step: s.step,
      op: s.op,
      lesson: this.lessons.current?.id ?? null,
      call: callNumber(s.graphCall),
      sel: selectionText(s.selection),
      ...chartChoiceWords(s),
    };
    this.startButton.disabled = true;
    this.startButton.textContent = "Opening a room…";
    this.error.hidden = true;
    try {
      const room = await this.rooms.create(state, timeoutSignal(ROOM_START_TIMEOUT_MS));
      presenterKeys.set(room.code, room.presenter_key);
      location.assign(`/room/${room.code}`);
    } catch (err) {
      this.startButton.disabled = false;
      this.startButton.textContent = "Start a room";
      if (err instanceof DOMException && err.name === "TimeoutError") {
        this.fail(`The server did not answer within ${ROOM_START_TIMEOUT_MS / 1000} s, so no room was opened here; try again.`);
      } else if (err instanceof ApiError && (err.status === 401 || err.status === 403)) {
        // as a run asks for it (app.ts): in plain words, and the token given opens the room at
        // once (Start a room had to be pressed again, under the header the server names)
        const refused = app.api.token !== null;
        this.fail(refused ? "The server did not take that access token: press Start a room to give it again." : "Opening a room on this server needs its access token (whoever started the server has it).");
        const token = window.prompt(refused ? "That token was not accepted. Access token for this gradwalk server" : "Access token for this gradwalk server")?.trim();
        if (!token) return;
        app.api.token = token;
        void this.start();
      } else {
        this.fail(`Could not open a room: ${(err as Error).message}`);
      }
    }
  }

  /** Inside a room (`/room/K7MQ2X`), say which one and that the choices below leave it. */
  private renderHere(): void {
    const room = window.gradwalkRoom;
    const code = room?.info.code;
    this.here.hidden = !code;
    if (!room || !code) return;
    const as = room.role === "presenter" ? "presenting" : "following";
    this.here.textContent = `You are in room ${spacedCode(code)}, ${as}. Starting or joining another room leaves this one.`;
  }

  /**
   * Offer to resume presenting the rooms this browser opened that the server still has. A
   * room that ended or expired (or that a restarted server without its rooms forgot) is
   * forgotten here and said to have ended: its button led to the server's 404 page.
   */
  private async renderResume(): Promise<void> {
    const turn = ++this.listing;
    const saved = presenterKeys.saved();
    const gone = await Promise.all(saved.map((room) => this.rooms.gone(room.code)));
    if (turn !== this.listing) return;
    saved.forEach((room, i) => gone[i] && this.forget(room.code));
    const live = saved.filter((_, i) => !gone[i]);
    this.resume.replaceChildren(
      ...(live.length ? [h("p", { class: "gw-muted", text: "Rooms you opened in this browser:" })] : []),
      ...live.map((room) =>
        h("button", {
          type: "button",
          class: "gw-btn",
          text: `Resume presenting ${spacedCode(room.code)}`,
          data: { gw: "room-resume", room: room.code },
          on: { click: (ev) => void this.resumeRoom(room, ev.currentTarget as HTMLButtonElement) },
        }),
      ),
      ...this.ended.map((code) => h("p", { class: "gw-muted", role: "status", data: { gw: "room-ended-note" }, text: `Room ${spacedCode(code)} has ended; start a new room to present again.` })),
    );
  }

  /** Present `room` from this tab again, unless it ended since the dialog listed it. */
  private async resumeRoom(room: SavedRoom, button: HTMLButtonElement): Promise<void> {
    button.disabled = true;
    if (await this.rooms.gone(room.code)) {
      this.forget(room.code);
      await this.renderResume();
      return;
    }
    presenterKeys.set(room.code, room.key);
    location.assign(`/room/${room.code}`);
  }

  /** Drop the key of ended room `code`, and say it ended. */
  private forget(code: string): void {
    presenterKeys.forget(code);
    if (!this.ended.includes(code)) this.ended.push(code);
  }
}
