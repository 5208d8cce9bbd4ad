// Back and Forward. The page's history holds one entry a run (url-state.ts pushes one when
// another run is shown): going to an entry loads its run into that same entry, so the
// entries after it stay there for Forward.
import { readUrl, type UrlState, type UrlSync } from "./url-state";

/** On Back and Forward, show the entry's run and view with `apply`; `shown` is the run on screen after it. */
export function followHistory(url: UrlSync, apply: (wanted: UrlState) => Promise<void>, shown: () => string | null): void {
  window.addEventListener("popstate", () => {
    // a history entry without the charts' choices had the defaults
    const { yscale, perParam, hide, ...rest } = readUrl();
    const ticket = url.navigate(rest.run);
    void apply({ ...rest, yscale: yscale ?? "auto", perParam: perParam ?? false, hide: hide ?? [] }).finally(() => url.arrived(ticket, shown()));
  });
}
