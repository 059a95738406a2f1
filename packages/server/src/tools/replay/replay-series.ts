/**
 * Replay over time: admitted, rejected and flipped requests per second under each side, in all and per rule,
 * re-binned into at most `bins` columns for the HTML report's charts. Bounded: past MAX_SECONDS distinct
 * seconds per series, later seconds are counted in the total only.
 */
import type { ReplayStep } from './replay.js';

/** Counts of one time bin. */
export interface SeriesBin {
  admitted: number;
  rejected: number;
  baselineAdmitted: number;
  baselineRejected: number;
  flips: number;
}

/** Most distinct seconds kept per series (a little over a day). */
export const MAX_SECONDS = 100_000;

const emptyBin = (): SeriesBin => ({ admitted: 0, rejected: 0, baselineAdmitted: 0, baselineRejected: 0, flips: 0 });

function add(bin: SeriesBin, step: ReplayStep): void {
  if (step.rejected) bin.rejected++;
  else bin.admitted++;
  if (step.baselineRejected) bin.baselineRejected++;
  else bin.baselineAdmitted++;
  if (step.rejected !== step.baselineRejected) bin.flips++;
}

/** Collects steps per second, in all and per rule. */
export class ReplaySeries {
  readonly total = new Map<number, SeriesBin>();
  readonly byRule = new Map<string, Map<number, SeriesBin>>();
  // The last bins used: most steps land in the second, and under the rule, of the step before.
  #second = Number.NaN;
  #totalBin: SeriesBin | undefined;
  #rule: string | undefined;
  #ruleSeries: Map<number, SeriesBin> | undefined;
  #ruleBin: SeriesBin | undefined;

  add(t: number, step: ReplayStep): void {
    const second = Math.floor(t / 1000);
    if (second !== this.#second) {
      this.#second = second;
      this.#totalBin = this.#bin(this.total, second);
      this.#ruleBin = undefined;
    }
    if (step.rule !== this.#rule || this.#ruleSeries === undefined) {
      this.#rule = step.rule;
      let rule = this.byRule.get(step.rule);
      if (rule === undefined) {
        rule = new Map();
        this.byRule.set(step.rule, rule);
      }
      this.#ruleSeries = rule;
      this.#ruleBin = undefined;
    }
    this.#ruleBin ??= this.#bin(this.#ruleSeries, second);
    if (this.#totalBin !== undefined) add(this.#totalBin, step);
    if (this.#ruleBin !== undefined) add(this.#ruleBin, step);
  }

  /** The bin of `second` in `series`; undefined past MAX_SECONDS (counted in the total only). */
  #bin(series: Map<number, SeriesBin>, second: number): SeriesBin | undefined {
    let bin = series.get(second);
    if (bin === undefined) {
      if (series.size >= MAX_SECONDS) return undefined;
      bin = emptyBin();
      series.set(second, bin);
    }
    return bin;
  }
}

/** `series` re-binned into at most `bins` equal columns from `fromS` to `toS` (seconds, inclusive). */
export function rebin(series: ReadonlyMap<number, SeriesBin>, fromS: number, toS: number, bins: number): SeriesBin[] {
  const width = Math.max(1, Math.ceil((toS - fromS + 1) / bins));
  const out = Array.from({ length: Math.ceil((toS - fromS + 1) / width) }, emptyBin);
  for (const [second, bin] of series) {
    const target = out[Math.floor((second - fromS) / width)];
    if (target === undefined) continue;
    target.admitted += bin.admitted;
    target.rejected += bin.rejected;
    target.baselineAdmitted += bin.baselineAdmitted;
    target.baselineRejected += bin.baselineRejected;
    target.flips += bin.flips;
  }
  return out;
}
