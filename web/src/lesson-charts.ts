// How opening a lesson sets the training charts (per parameter, y scale, charts hidden). A
// lesson with a `charts` field opens them its way; one without leaves them as the learner
// set them, only putting back what the lesson before it imposed. lessons.ts asks it each time.
import { Y_SCALES, type YScale } from "./chart-scales";
import type { ViewState } from "./store";

/** The charts' choices a lesson may set (a part of url-state.ts's ChartChoices). */
export interface LessonChartChoices {
  perParam: boolean;
  yscale: YScale;
  hide: string[];
}

/** What a lesson says of the charts (GET /api/lessons; see saysSomething). */
export interface LessonCharts {
  per_param: boolean;
  yscale: string;
  hide: string[];
}

/** The choices a lesson's `charts` field stands for (unsaid parts: together, auto, none hidden). */
export function imposedChoices(charts: LessonCharts): LessonChartChoices {
  return {
    perParam: charts.per_param === true,
    yscale: Y_SCALES.includes(charts.yscale as YScale) ? (charts.yscale as YScale) : "auto",
    hide: charts.hide ?? [],
  };
}

/**
 * Whether a lesson says anything of the charts: GET /api/lessons hands `charts: null` for a
 * lesson whose entry has none (one that writes out the defaults does say them).
 */
export function saysSomething(charts: LessonCharts | null | undefined): charts is LessonCharts {
  return !!charts;
}

const sameHide = (a: readonly string[], b: readonly string[]): boolean => a.length === b.length && a.every((x, i) => x === b[i]);

/**
 * Remembers the learner's own chart choices across lessons. The rule: a lesson with
 * `charts` sets all three choices, after noting the learner's own (those in place when the
 * first such lesson opened); a lesson without `charts` puts each choice a lesson imposed
 * back to the learner's own, unless the learner changed it since (then it is theirs), and
 * leaves the rest alone. With no lesson's choices in place it changes nothing.
 */
export class LessonChartMemory {
  private own: LessonChartChoices | null = null;
  private imposed: LessonChartChoices | null = null;

  /** The choices opening a lesson with `charts` (or without: undefined) applies, given the
   * charts as they are now; the fields left out stay as they are. */
  choicesFor(charts: LessonCharts | null | undefined, now: Pick<ViewState, "perParam" | "yscale" | "hide">): Partial<LessonChartChoices> {
    if (saysSomething(charts)) {
      this.own ??= { perParam: now.perParam, yscale: now.yscale, hide: [...now.hide] };
      this.imposed = imposedChoices(charts);
      return this.imposed;
    }
    const own = this.own;
    const imposed = this.imposed;
    this.own = this.imposed = null;
    if (!own || !imposed) return {};
    const back: Partial<LessonChartChoices> = {};
    if (now.perParam === imposed.perParam) back.perParam = own.perParam;
    if (now.yscale === imposed.yscale) back.yscale = own.yscale;
    if (sameHide(now.hide, imposed.hide)) back.hide = [...own.hide];
    return back;
  }

  /** A reload showing a lesson's card again (its link carried the charts it set): were it one
   * with `charts`, the next lesson without puts them back to the defaults, the learner's own
   * choices before it being unknown. */
  resumed(charts: LessonCharts | null | undefined): void {
    if (!saysSomething(charts)) return;
    this.own ??= { perParam: false, yscale: "auto", hide: [] };
    this.imposed = imposedChoices(charts);
  }
}
