// Choices this browser remembers (theme, presenter size, pane widths) in localStorage,
// which a browser may switch off: then a choice lasts for the page, and nothing fails.

/** The value saved under `key`, or null (none saved, or storage off). */
export function readSaved(key: string): string | null {
  try {
    return localStorage.getItem(key);
  } catch {
    return null;
  }
}

/** Save `value` under `key`; `null` forgets it. Storage that is off is not an error. */
export function writeSaved(key: string, value: string | null): void {
  try {
    if (value === null) localStorage.removeItem(key);
    else localStorage.setItem(key, value);
  } catch {
    // storage disabled: the choice lasts for this page
  }
}
