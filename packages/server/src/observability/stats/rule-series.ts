/** The dashboard's per-rule decisions per second: a ring of per-second outcome counts. */
import type { DecisionOutcome } from '../decision-events.js';

/** The four outcomes, in the order of a series' columns. */
export const OUTCOMES: readonly DecisionOutcome[] = ['ok', 'near_limit', 'over_limit', 'shadow'];

const OUTCOME_INDEX: Readonly<Record<DecisionOutcome, number>> = { ok: 0, near_limit: 1, over_limit: 2, shadow: 3 };

/** Decisions per second of one outcome, oldest first. */
export type OutcomeCounts = Record<DecisionOutcome, number[]>;

/**
 * Per-second counts of the four outcomes over the last `windowS` seconds, in a fixed ring: memory never
 * grows with traffic, and recording is an index computation and an increment (no allocation, no timer).
 * A slot is zeroed lazily when a new second lands on it, so seconds without traffic cost nothing.
 */
export interface RuleSeries {
  /** Counts one decision taken at `atMs`. Decisions older than the window are ignored. */
  add(outcome: DecisionOutcome, atMs: number): void;
  /** The counts of seconds `fromS..toS` inclusive (epoch seconds); seconds outside the window read 0. */
  read(fromS: number, toS: number): OutcomeCounts;
  /** Sums of each outcome over seconds `fromS..toS`. */
  sum(fromS: number, toS: number): Record<DecisionOutcome, number>;
  /** The most recent second that saw a decision (epoch seconds), or -Infinity. */
  readonly lastS: number;
}

/** Creates an empty series over `windowS` seconds. */
export function createRuleSeries(windowS: number): RuleSeries {
  // stamps[slot] is the epoch second the slot's counts belong to; counts is slot-major, 4 per slot.
  const stamps = new Float64Array(windowS).fill(Number.NEGATIVE_INFINITY);
  const counts = new Uint32Array(windowS * 4);
  let lastS = Number.NEGATIVE_INFINITY;

  const slotOf = (s: number) => ((s % windowS) + windowS) % windowS;
  const valid = (s: number) => stamps[slotOf(s)] === s;

  return {
    add(outcome, atMs) {
      const s = Math.floor(atMs / 1000);
      if (s <= lastS - windowS) return;
      const slot = slotOf(s);
      if (stamps[slot] !== s) {
        stamps[slot] = s;
        counts.fill(0, slot * 4, slot * 4 + 4);
      }
      const i = slot * 4 + OUTCOME_INDEX[outcome];
      counts[i] = (counts[i] as number) + 1;
      if (s > lastS) lastS = s;
    },
    read(fromS, toS) {
      const out: OutcomeCounts = { ok: [], near_limit: [], over_limit: [], shadow: [] };
      for (let s = fromS; s <= toS; s++) {
        const base = slotOf(s) * 4;
        const ok = valid(s);
        out.ok.push(ok ? (counts[base] as number) : 0);
        out.near_limit.push(ok ? (counts[base + 1] as number) : 0);
        out.over_limit.push(ok ? (counts[base + 2] as number) : 0);
        out.shadow.push(ok ? (counts[base + 3] as number) : 0);
      }
      return out;
    },
    sum(fromS, toS) {
      const out = { ok: 0, near_limit: 0, over_limit: 0, shadow: 0 };
      for (let s = Math.max(fromS, toS - windowS + 1); s <= toS; s++) {
        if (!valid(s)) continue;
        const base = slotOf(s) * 4;
        out.ok += counts[base] as number;
        out.near_limit += counts[base + 1] as number;
        out.over_limit += counts[base + 2] as number;
        out.shadow += counts[base + 3] as number;
      }
      return out;
    },
    get lastS() {
      return lastS;
    },
  };
}
