// Teaching modes around the app: the Lessons gallery (header button, `/?lesson=ID`), the
// Classroom dialog (present or join), and, on a room page, classroom live mode.
import "./styles/teaching.css";
import type { App } from "./app";
import { LessonsGallery } from "./lessons";
import type { RoomInfo } from "./room-client";
import { RoomMode } from "./room";
import { ClassroomDialog } from "./room-dialog";

declare global {
  interface Window {
    gradwalkRoom?: RoomMode;
  }
}

function roomInfo(): RoomInfo | null {
  try {
    const data = JSON.parse(document.getElementById("bootstrap")?.textContent ?? "{}") as { room?: RoomInfo };
    return data.room && typeof data.room.code === "string" ? data.room : null;
  } catch {
    return null;
  }
}

/** Wire the lessons and the classroom into `app`; `started` resolves once the app has loaded. */
export function mountTeaching(app: App, started: Promise<void>): void {
  const lessons = new LessonsGallery(app);
  // a lesson's own snippet (no example's code) is named by its lesson in the examples list
  app.examplesMenu.lessonTitleOf = (source) => lessons.lessons.find((l) => l.source === source)?.title ?? null;
  const classroom = new ClassroomDialog(app, lessons);
  app.root.querySelector("[data-gw=lessons]")?.addEventListener("click", () => void lessons.openGallery());
  app.root.querySelector("[data-gw=classroom]")?.addEventListener("click", () => classroom.open());
  const search = location.search; // before the app rewrites it
  const info = roomInfo();
  const room = info ? new RoomMode(app, info, lessons) : null;
  if (room) window.gradwalkRoom = room;
  else {
    // a run shown with a lesson's card (▶ Run of its code changed) keeps the card on Back, Forward and reload
    app.hooks.onModel = (runId) => lessons.keepWith(runId);
    lessons.followHistory();
  }
  void started.then(() => (room ? room.connect() : lessons.startFromUrl(search)));
}
