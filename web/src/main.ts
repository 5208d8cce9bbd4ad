// The page's entry point: read the server's bootstrap data, apply the theme, mount the app.
//
// `window.gradwalk` is the app, for scripting the page (the browser tests and the
// benchmark feed traces through `gradwalk.loadTrace(...)`).
import "./styles/app.css";
import { App } from "./app";
import type { Bootstrap } from "./api";
import { bindRecentRuns } from "./recent-runs";
import { mountTeaching } from "./teaching";
import { initTheme } from "./theme";

declare global {
  interface Window {
    gradwalk?: App;
  }
}

function bootstrap(): Bootstrap {
  const el = document.getElementById("bootstrap");
  const data = el?.textContent ? (JSON.parse(el.textContent) as Partial<Bootstrap>) : {};
  return { api: data.api ?? "/api", cuda: !!data.cuda, version: data.version ?? "", token_required: !!data.token_required };
}

initTheme();
const root = document.getElementById("gradwalk");
if (root) {
  const app = new App(root, bootstrap());
  window.gradwalk = app;
  bindRecentRuns(app);
  mountTeaching(app, app.start());
}
