// The lessons gallery: a dialog listing the ready lessons, and the lesson card shown above
// the workspace while one is open. Opening a lesson puts its code in the editor, asks the
// server for the lesson's recorded run (one run shared by everyone who opens it) and lands
// on the lesson's view and step, with the training charts as the lesson says (per parameter,
// y scale, charts hidden; as the learner set them where it says nothing: lesson-charts.ts).
// `/?lesson=ID` opens one directly.
import type { App } from "./app";
import { $, breakAtDots, h } from "./dom";
import { LessonChartMemory, type LessonCharts } from "./lesson-charts";
import { LessonFilter } from "./lesson-filter";
import { applyTry, type TryStep } from "./lesson-try";
import { VIEWS, type ViewName } from "./store";

export interface Lesson {
  id: string;
  title: string;
  /** The part of the course it belongs to; a part's lessons stand together. */
  part: string;
  summary: string;
  text: string;
  try_next: string;
  source: string;
  file: string;
  view: string;
  step: number | null;
  /** How the training charts open (server/lessons); where a lesson says nothing, as the
   * learner set them (lesson-charts.ts). */
  charts?: LessonCharts | null;
  /** The changes the "try" asks for, which Try it makes, a step a press (empty where the try is not edits). */
  try_steps?: TryStep[];
}

interface LessonRun {
  id: string;
  status: string;
}

// Which lesson a run belongs to, so a reload (whose URL names only the run) keeps the card.
const RUNS_KEY = "gradwalk-lesson-runs";

function lessonRuns(): Record<string, string> {
  try {
    return JSON.parse(sessionStorage.getItem(RUNS_KEY) ?? "{}") as Record<string, string>;
  } catch {
    return {};
  }
}

function rememberRun(runId: string, lessonId: string): void {
  try {
    sessionStorage.setItem(RUNS_KEY, JSON.stringify({ ...lessonRuns(), [runId]: lessonId }));
  } catch {
    // storage disabled: the card goes away on reload
  }
}

/** The view a lesson opens at, where it names one the app has. */
function viewOf(lesson: Lesson): ViewName | null {
  return VIEWS.includes(lesson.view as ViewName) ? (lesson.view as ViewName) : null;
}

export class LessonsGallery {
  lessons: Lesson[] = [];
  current: Lesson | null = null;
  /** Show only the card's title line (the presenter's projector needs the room). */
  collapsed = false;
  /** Told when a lesson is opened or its card closed (the presenter tells the room). */
  onChange: (lesson: Lesson | null) => void = () => {};
  private readonly dialog: HTMLDialogElement;
  private readonly list: HTMLElement;
  private readonly filter: LessonFilter;
  private readonly card: HTMLElement;
  private readonly spoken = h("p", { class: "gw-visually-hidden", "aria-live": "polite", data: { gw: "lesson-announcer" } });
  private loaded: Promise<void> | null = null;
  private opening = 0;
  /** The lesson being opened, until its run is shown (Try it waits for it: the run would replace the try's code). */
  private opened: Promise<boolean> = Promise.resolve(true);
  private readonly chartMemory = new LessonChartMemory();
  /** The lesson whose code Try it changed and how many of its try's steps it made, until a lesson is opened again. */
  private tried: { lesson: string; steps: number } | null = null;

  constructor(private readonly app: App) {
    const root = app.root;
    this.list = h("div", { class: "gw-lesson-parts" });
    this.filter = new LessonFilter(this.list, () => this.lessons);
    this.dialog = h(
      "dialog",
      { class: "gw-dialog gw-lessons-dialog", "aria-labelledby": "gw-lessons-title" },
      h(
        "div",
        { class: "gw-dialog-head" },
        h("h2", { id: "gw-lessons-title", text: "Lessons" }),
        h("button", { type: "button", class: "gw-btn", "aria-label": "Close", text: "✕", on: { click: () => this.dialog.close() } }),
      ),
      h("p", { class: "gw-dialog-intro", text: "Each lesson runs a short snippet and opens at the step that shows its idea. Change the code and run it again to see what moves." }),
      this.filter.row,
      this.list,
    );
    this.dialog.addEventListener("click", (ev) => {
      if (ev.target === this.dialog) this.dialog.close(); // a click on the backdrop
    });
    this.card = h("section", { class: "gw-lesson", "aria-label": "Lesson", hidden: true, data: { gw: "lesson-card" } });
    root.append(this.dialog);
    $(root, ".gw-main").before(this.card, this.spoken);
    root.classList.add("gw-has-bars");
  }

  /** Fetch the lessons (once). */
  load(): Promise<void> {
    this.loaded ??= (async () => {
      const res = await fetch(`${this.app.api.base}/lessons`);
      if (!res.ok) throw new Error(`HTTP ${res.status}`);
      this.lessons = ((await res.json()) as { lessons: Lesson[] }).lessons;
      this.renderList();
    })().catch((err: Error) => {
      this.loaded = null;
      this.app.output.say(`Could not load the lessons: ${err.message}`, "error");
    });
    return this.loaded;
  }

  async openGallery(): Promise<void> {
    if (!this.dialog.open) {
      this.filter.clear(); // the gallery opens whole, whatever was looked for last time
      this.dialog.showModal();
    }
    await this.load();
    const first = this.list.querySelector<HTMLButtonElement>(this.current ? `[data-lesson="${this.current.id}"]` : "button");
    first?.focus();
  }

  /**
   * Open a lesson: its code, its shared run, its view, step and charts' choices, and its card.
   * A run started while the lesson's run is fetched (▶ Run pressed at once) stays on screen.
   */
  open(id: string): Promise<boolean> {
    this.opened = this.openLesson(id);
    return this.opened;
  }

  private async openLesson(id: string): Promise<boolean> {
    await this.load();
    const lesson = this.lessons.find((l) => l.id === id);
    if (!lesson) {
      this.app.output.say(`There is no lesson “${id}”.`, "error");
      return false;
    }
    if (this.dialog.open) this.dialog.close();
    const ticket = ++this.opening;
    this.tried = null;
    this.show(lesson.id);
    this.app.editor.source = lesson.source;
    this.app.editor.setErrors([]);
    const runsBefore = this.app.runsStarted;
    let run: LessonRun;
    try {
      const res = await fetch(`${this.app.api.base}/lessons/${encodeURIComponent(id)}/run`, { method: "POST" });
      const body = (await res.json()) as LessonRun & { detail?: string };
      if (!res.ok) throw new Error(body.detail ?? `HTTP ${res.status}`);
      run = body;
    } catch (err) {
      this.app.output.say(`Could not run the lesson: ${(err as Error).message}`, "error");
      return false;
    }
    if (ticket !== this.opening) return false; // another lesson was opened meanwhile
    rememberRun(run.id, lesson.id);
    this.app.drafts.drop(run.id); // opened again, a lesson starts from its code: edits to it are not put back
    // the learner ran the lesson's code (or a change of it) before its run came: theirs stays
    if (this.app.runsStarted !== runsBefore) return true;
    const view = viewOf(lesson);
    // a lesson that names no step starts the stepper at its first (the last lesson's step stayed)
    const step = lesson.step ?? 0;
    await this.app.applyUrl({ run: run.id, view, step, op: null, selection: null, call: null, ...this.chartMemory.choicesFor(lesson.charts, this.app.store.state) });
    return true;
  }

  /**
   * Try it ▶ for a lesson whose try is edits (null for any other): at the end of the try's
   * words, or `folded` among the card's buttons, where the words are hidden. A try of several
   * steps reads Then ▶ once Try it has made a step and another is left.
   */
  private tryButton(lesson: Lesson, folded: boolean): HTMLElement | null {
    const steps = lesson.try_steps ?? [];
    if (steps.length === 0) return null;
    const made = this.stepsMade(lesson);
    const then = made > 0 && made < steps.length;
    const what = then ? `the try's next change (${made + 1} of ${steps.length})` : "the change the lesson's try asks for";
    return h("button", {
      type: "button",
      class: folded ? "gw-btn" : "gw-btn gw-lesson-try-it",
      text: then ? "Then ▶" : "Try it ▶",
      title: folded ? `Make ${what} in the code, and run it: ${lesson.try_next}` : `Make ${what} in the code, and run it`,
      data: { gw: folded ? "lesson-try-folded" : "lesson-try", nav: folded ? "try-folded" : "try" },
      on: { click: () => void this.tryIt(lesson) },
    });
  }

  /** How many of `lesson`'s try steps Try it made in the code since the lesson was opened. */
  private stepsMade(lesson: Lesson): number {
    return this.tried?.lesson === lesson.id ? this.tried.steps : 0;
  }

  /** Make the next step of the lesson's try in the editor's code, and run it. */
  private async tryIt(lesson: Lesson): Promise<void> {
    const steps = lesson.try_steps ?? [];
    if (steps.length === 0) return;
    // pressed while the lesson's run still comes: it would replace the try's code, so it comes first
    await this.opened;
    if (this.current?.id !== lesson.id) return;
    // the code is changed only for a run that can start: a room's viewer keeps the presenter's
    const refused = this.app.running ? "A run is going: wait for it to end (or press ■ Stop), then try again." : this.app.runRefused;
    if (refused !== null) {
      this.app.output.say(refused);
      return;
    }
    const done = applyTry(this.app.editor.source, steps, this.stepsMade(lesson));
    if ("source" in done) {
      this.app.editor.editAsUser(done.source);
      this.tried = { lesson: lesson.id, steps: done.step + 1 };
      this.renderCard(); // Then ▶ where a step is left
      // it lands where the lesson's words look (data-edit's AddmmBackward0, at its step 3)
      const view = viewOf(lesson) ?? "tape";
      await this.app.runAndOpen(view, lesson.step ?? 0);
      this.keepWith(this.app.runId);
    } else if (done.why === "made") {
      const change = steps.length > 1 ? "the try's changes" : "this change";
      this.app.output.say(`The code already has ${change}: press ▶ Run to run it again, or open the lesson again to start from its code.`);
    } else {
      this.app.output.say(`The code no longer holds “${done.missing.trim()}”, which this try changes: open the lesson again to start from its code.`, "error");
    }
  }

  /**
   * Keep the card shown with run `runId` across a reload: a run of the lesson's code changed
   * (Try it's), or the run a room that ends reloads the page at. Only the lesson's own run
   * was remembered, and the card went away.
   */
  keepWith(runId: string | null): void {
    if (runId && this.current) rememberRun(runId, this.current.id);
  }

  /** Show a lesson's card without touching the workspace (a room viewer follows the presenter's). */
  show(id: string | null): void {
    const lesson = id ? (this.lessons.find((l) => l.id === id) ?? null) : null;
    const changed = lesson?.id !== this.current?.id;
    this.current = lesson;
    this.renderCard();
    this.app.title.lesson = lesson?.title ?? null;
    this.app.title.refresh();
    if (changed) this.onChange(lesson);
  }

  /** Close the lesson's card; the focus, on its ✕, goes to the Lessons button that opens another. */
  private close(): void {
    this.show(null);
    this.app.root.querySelector<HTMLElement>("[data-gw=lessons]")?.focus();
  }

  /**
   * Open `/?lesson=ID`, or show the card of the lesson whose run the URL names. `search` is
   * the URL's query as the page was opened (the app rewrites the address bar as it loads).
   */
  async startFromUrl(search: string): Promise<void> {
    const q = new URLSearchParams(search);
    const wanted = q.get("lesson");
    if (wanted) {
      await this.open(wanted);
      return;
    }
    await this.showRunCard(q.get("run"));
  }

  /**
   * Back and Forward: the card shown is the one of the run gone to (its lesson's, or none for
   * a plain run), and a lesson still opening is not opened over it. Without a room only: a
   * room's viewer follows the presenter's card.
   */
  followHistory(): void {
    window.addEventListener("popstate", () => {
      this.opening++;
      void this.showRunCard(new URLSearchParams(location.search).get("run"));
    });
  }

  /** Show the card of the lesson whose run `run` is, or none. */
  private async showRunCard(run: string | null): Promise<void> {
    const lessonId = run ? lessonRuns()[run] : undefined;
    if (!lessonId) {
      this.show(null);
      return;
    }
    const ticket = this.opening;
    await this.load();
    if (ticket !== this.opening) return; // Back again, or another lesson, meanwhile
    this.show(lessonId);
    // the link carries the charts this lesson set: the next lesson puts them back
    this.chartMemory.resumed(this.current?.charts);
  }

  /** The gallery: each part under its name, its lessons numbered on from the part before. */
  private renderList(): void {
    const parts: { name: string; first: number; lessons: Lesson[] }[] = [];
    this.lessons.forEach((lesson, i) => {
      const last = parts[parts.length - 1];
      if (last && last.name === lesson.part) last.lessons.push(lesson);
      else parts.push({ name: lesson.part, first: i, lessons: [lesson] });
    });
    this.list.replaceChildren(
      ...parts.map((part, k) =>
        h(
          "section",
          { class: "gw-lesson-part", "aria-labelledby": `gw-lesson-part-${k}` },
          h("h3", { id: `gw-lesson-part-${k}`, class: "gw-lesson-part-name", text: part.name }),
          h(
            "ol",
            { class: "gw-lesson-grid", start: String(part.first + 1) },
            ...part.lessons.map((lesson, j) => this.renderTile(lesson, part.first + j)),
          ),
        ),
      ),
    );
    this.filter.apply();
  }

  private renderTile(lesson: Lesson, i: number): HTMLElement {
    return h(
      "li",
      {},
      h(
        "button",
        { type: "button", class: "gw-lesson-tile", data: { lesson: lesson.id }, on: { click: () => void this.open(lesson.id) } },
        h("span", { class: "gw-lesson-n", text: String(i + 1) }),
        // a long dotted name (torch.autograd.Function) wraps at its dots in a narrow tile
        h("span", { class: "gw-lesson-tile-title" }, breakAtDots(lesson.title)),
        h("span", { class: "gw-lesson-tile-summary" }, breakAtDots(lesson.summary)),
      ),
    );
  }

  private renderCard(): void {
    const lesson = this.current;
    this.card.hidden = lesson === null;
    if (!lesson) {
      this.card.replaceChildren();
      delete this.card.dataset.lesson;
      this.spoken.textContent = "";
      return;
    }
    const i = this.lessons.indexOf(lesson);
    const kicker = `Lesson ${i + 1} of ${this.lessons.length} · ${lesson.part}`;
    // a screen reader hears which lesson Next ▶ opened (the card is drawn anew, not announced)
    if (this.card.dataset.lesson !== lesson.id) this.spoken.textContent = `Lesson ${i + 1} of ${this.lessons.length}: ${lesson.title}`;
    const prev = this.lessons[i - 1];
    const next = this.lessons[i + 1];
    this.card.dataset.lesson = lesson.id;
    this.card.dataset.collapsed = String(this.collapsed);
    const toggle = () => {
      this.collapsed = !this.collapsed;
      this.renderCard();
    };
    // the card is drawn anew: the button that had the keyboard keeps it (Enter on Next ▶,
    // again and again, walks the lessons; Hide text toggles back)
    const focused = (document.activeElement as HTMLElement | null)?.closest<HTMLElement>("[data-nav]");
    const hadFocus = focused && this.card.contains(focused) ? focused.dataset.nav : undefined;
    this.card.replaceChildren(
      h(
        "div",
        { class: "gw-lesson-body" },
        // one line: a part's name too long for it ends in "…", whole on hover
        h("div", { class: "gw-lesson-kicker", text: kicker, title: kicker }),
        h("h2", { class: "gw-lesson-title", text: lesson.title }),
        // the words scroll in a box of their own where they are long (data-edit's, in
        // presenter type at 1280 x 720, took half the screen from the graph and the code)
        h(
          "div",
          // a region the keyboard reaches, to scroll it where it scrolls
          { class: "gw-lesson-words", data: { gw: "lesson-words" }, tabindex: 0, role: "region", "aria-label": "Lesson text" },
          h("p", { class: "gw-lesson-text", text: lesson.text }),
          lesson.try_next
            ? h(
                "p",
                { class: "gw-lesson-try" },
                h("strong", { text: "Try this: " }),
                lesson.try_next,
                // at the end of the words it acts on (beside the card's buttons it took the
                // title's room, and a long title took a second line on a projector)
                this.tryButton(lesson, false),
              )
            : null,
        ),
      ),
      h(
        "div",
        { class: "gw-lesson-nav" },
        // the card folded to its title line (a room's projector) keeps Try it among its buttons
        this.collapsed ? this.tryButton(lesson, true) : null,
        h("button", {
          type: "button",
          class: "gw-btn",
          text: this.collapsed ? "Show text" : "Hide text",
          "aria-expanded": String(!this.collapsed),
          data: { gw: "lesson-toggle", nav: "toggle" },
          on: { click: toggle },
        }),
        h("button", { type: "button", class: "gw-btn", text: "All lessons", data: { nav: "all" }, on: { click: () => void this.openGallery() } }),
        h("button", { type: "button", class: "gw-btn", text: "◀ Previous", disabled: !prev, title: prev?.title, data: { nav: "prev" }, on: { click: () => prev && void this.open(prev.id) } }),
        h("button", { type: "button", class: "gw-btn gw-btn-primary", text: "Next ▶", disabled: !next, title: next?.title, data: { nav: "next" }, on: { click: () => next && void this.open(next.id) } }),
        h("button", { type: "button", class: "gw-btn gw-lesson-close", "aria-label": "Close the lesson", title: "Close the lesson", text: "✕", on: { click: () => this.close() } }),
      ),
    );
    if (hadFocus) {
      // at the last (first) lesson Next (Previous) is disabled: the other one takes the keyboard
      const keep = [hadFocus, hadFocus === "next" ? "prev" : hadFocus === "prev" ? "next" : hadFocus]
        .map((nav) => this.card.querySelector<HTMLButtonElement>(`[data-nav=${nav}]`))
        .find((b) => b && !b.disabled);
      keep?.focus();
    }
  }
}
