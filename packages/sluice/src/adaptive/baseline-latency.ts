/**
 * The no-load latency an algorithm compares with: the lowest window reading seen, moved up only when
 * latency stayed at `riseFactor` times it or more for a whole period without falling by a quarter —
 * the service became slower for good. A queue that the shrinking limit is draining gets markedly faster
 * within a period, so it is not taken for the service's new speed; re-learning the baseline from any
 * later reading (as a periodic probe does) would take the very queue it must detect for the floor, and
 * the limit would creep upwards.
 */

/** A baseline latency. */
export interface BaselineLatency {
  /** Feeds a window's reading of the no-load latency at `atMs`; answers the baseline. */
  update(rttMs: number, atMs: number): number;
}

/** A reading below this share of the one when latency last fell means it is still falling: a queue draining. */
const FALLING = 0.75;

/** Creates a baseline that rises after `periodMs` spent at `riseFactor` × it or more without falling. */
export function createBaselineLatency(periodMs: number, riseFactor: number): BaselineLatency {
  let baseline = Number.POSITIVE_INFINITY;
  // The current stretch of slow windows: its fastest reading, and when (and to what) latency last fell
  // by a quarter. Counted from the stretch's first window, not from fixed period boundaries: a slowdown
  // just after a boundary would otherwise wait almost two periods.
  let fastestSlow = Number.POSITIVE_INFINITY;
  let fellTo = Number.POSITIVE_INFINITY;
  let fellAtMs = Number.NaN;
  const endStretch = (newBaseline: number) => {
    baseline = newBaseline;
    fastestSlow = Number.POSITIVE_INFINITY;
    fellTo = Number.POSITIVE_INFINITY;
    fellAtMs = Number.NaN;
  };
  return {
    update(rttMs, atMs) {
      if (!(rttMs >= riseFactor * baseline)) endStretch(Math.min(baseline, rttMs));
      else {
        if (!(rttMs >= FALLING * fellTo)) {
          fellTo = rttMs;
          fellAtMs = atMs;
        }
        fastestSlow = Math.min(fastestSlow, rttMs);
        if (atMs - fellAtMs >= periodMs) endStretch(fastestSlow);
      }
      return baseline;
    },
  };
}
