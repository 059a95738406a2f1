/**
 * Gradient2 (after Netflix's concurrency-limits): scales the limit by the ratio of a baseline latency
 * to the short-term latency, plus a little headroom (√limit) so it keeps probing. The baseline is the
 * fastest short-term latency seen; it moves up only when a whole period stayed beyond the tolerance,
 * i.e. the service became slower for good (an exponential long-term average, as in the original,
 * drifts upwards with the very queue it is meant to detect).
 */
import type { LimitAlgorithm } from './limit-algorithm.js';

/** Tuning of Gradient2. */
export interface Gradient2Options {
  /** How much slower than the baseline the short term may be before the limit shrinks. @default 1.5 */
  tolerance?: number;
  /** How long latency must stay beyond twice the tolerance before the baseline moves up, in ms. @default 2000 */
  baselineMs?: number;
  /** Share of each step's target the limit moves by (0-1). @default 0.2 */
  smoothing?: number;
}

/** Creates the Gradient2 step. */
export function createGradient2(options: Gradient2Options = {}): LimitAlgorithm {
  const tolerance = options.tolerance ?? 1.5;
  const periodMs = options.baselineMs ?? 2000;
  const smoothing = options.smoothing ?? 0.2;
  let baseline = Number.POSITIVE_INFINITY;
  // The fastest window of the current period; at its end, a period that never came back within twice
  // the tolerance replaces the baseline (the service is slower now), else the baseline stays. Twice:
  // at equilibrium the short term sits near the tolerance, which must not lift the baseline.
  let fastest = Number.POSITIVE_INFINITY;
  let periodStart = Number.NEGATIVE_INFINITY;
  return {
    update(limit, sample) {
      const rtt = Math.max(sample.rttMs, 0.001);
      if (sample.atMs - periodStart >= periodMs) {
        if (fastest > 2 * tolerance * baseline && fastest !== Number.POSITIVE_INFINITY) baseline = fastest;
        fastest = Number.POSITIVE_INFINITY;
        periodStart = sample.atMs;
      }
      fastest = Math.min(fastest, rtt);
      baseline = Math.min(baseline, rtt);
      if (!sample.dropped && sample.inFlight * 2 < limit) return limit;
      const gradient = sample.dropped ? 0.5 : Math.max(0.5, Math.min(1, (tolerance * baseline) / rtt));
      const target = limit * gradient + Math.sqrt(limit);
      return limit * (1 - smoothing) + target * smoothing;
    },
  };
}
