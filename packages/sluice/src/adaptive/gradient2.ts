/**
 * Gradient2 (after Netflix's concurrency-limits): scales the limit by the ratio of a baseline latency
 * to the short-term (window average) latency, plus a little headroom (√limit) so it keeps probing. The
 * baseline is the lowest window reading (a low percentile, which one fast request of another route
 * cannot set), moved up only when a whole period stayed beyond twice the tolerance without the latency
 * falling, i.e. the service became slower for good. Not an exponential long-term average, as in the
 * original: that drifts upwards with the very queue it is meant to detect.
 */
import { createBaselineLatency } from './baseline-latency.js';
import { inUse, type LimitAlgorithm, lowMs, measuredMs } from './limit-algorithm.js';

/** Tuning of Gradient2. */
export interface Gradient2Options {
  /** How much slower than the baseline the short term may be before the limit shrinks. @default 1.5 */
  tolerance?: number;
  /**
   * How long latency must stay beyond twice the tolerance, without falling by a quarter, before the
   * baseline moves up, in ms. @default 2000
   */
  baselineMs?: number;
  /** Share of each step's target the limit moves by (0-1). @default 0.2 */
  smoothing?: number;
}

/** Creates the Gradient2 step. */
export function createGradient2(options: Gradient2Options = {}): LimitAlgorithm {
  const tolerance = options.tolerance ?? 1.5;
  const smoothing = options.smoothing ?? 0.2;
  // Twice the tolerance: at equilibrium the short term sits near the tolerance, which must not lift it.
  const baseline = createBaselineLatency(options.baselineMs ?? 2000, 2 * tolerance);
  return {
    update(limit, sample) {
      const rtt = measuredMs(sample.rttMs);
      const floor = baseline.update(lowMs(sample), sample.atMs);
      if (!sample.dropped && !inUse(sample, limit)) return limit;
      const gradient = sample.dropped ? 0.5 : Math.max(0.5, Math.min(1, (tolerance * floor) / rtt));
      const target = limit * gradient + Math.sqrt(limit);
      return limit * (1 - smoothing) + target * smoothing;
    },
  };
}
