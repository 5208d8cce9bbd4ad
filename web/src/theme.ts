// Light and dark themes, and the "presenter" size for projectors. Both are attributes on
// <html> that the CSS reads; the choice is remembered, and a `gw-theme` event tells the
// canvas views (the graph) to restyle.
import { readSaved, writeSaved } from "./saved";

type Theme = "light" | "dark";

const THEME_KEY = "gradwalk-theme";
const PRESENTER_KEY = "gradwalk-presenter";

export function currentTheme(): Theme {
  return document.documentElement.dataset.theme === "dark" ? "dark" : "light";
}

function announce(): void {
  document.dispatchEvent(new CustomEvent("gw-theme"));
}

export function setTheme(theme: Theme, remember = true): void {
  document.documentElement.dataset.theme = theme;
  if (remember) writeSaved(THEME_KEY, theme);
  announce();
}

export function setPresenter(on: boolean, remember = true): void {
  document.documentElement.dataset.presenter = on ? "on" : "off";
  if (remember) writeSaved(PRESENTER_KEY, on ? "on" : "off");
  announce();
}

export function presenterOn(): boolean {
  return document.documentElement.dataset.presenter === "on";
}

/** Apply the remembered (or the system's) theme and size before anything renders.
 * `presenter` given (an embed, an export: presenter type only where its link asks for it)
 * sets the size instead of the app's remembered choice, takes the reader's system theme
 * instead of the app's remembered one (its link's `theme` is applied later), and remembers
 * nothing: a course page's embeds look as its author chose, whatever this browser did in the app. */
export function initTheme(presenter?: boolean): void {
  const saved = presenter === undefined ? readSaved(THEME_KEY) : null;
  const system = matchMedia("(prefers-color-scheme: dark)").matches ? "dark" : "light";
  document.documentElement.dataset.theme = saved === "dark" || saved === "light" ? saved : system;
  const on = presenter ?? readSaved(PRESENTER_KEY) === "on";
  document.documentElement.dataset.presenter = on ? "on" : "off";
}

/** Wire a pair of toggle buttons (aria-pressed reflects the state). */
export function bindThemeButtons(themeButton: HTMLButtonElement | null, presenterButton: HTMLButtonElement | null): void {
  const sync = () => {
    themeButton?.setAttribute("aria-pressed", String(currentTheme() === "dark"));
    presenterButton?.setAttribute("aria-pressed", String(presenterOn()));
  };
  themeButton?.addEventListener("click", () => {
    setTheme(currentTheme() === "dark" ? "light" : "dark");
    sync();
  });
  presenterButton?.addEventListener("click", () => {
    setPresenter(!presenterOn());
    sync();
  });
  sync();
}
