/**
 * The no-load latency an algorithm compares with: the fastest seen, moved up only when latency stayed
 * at `riseFactor` times it or more for a whole period — the service became slower for good. Re-learning
 * it from any later sample (as a periodic probe does) would take the very queue it must detect for the
 * floor, and the limit would creep upwards.
 */

/** A baseline latency. */
export interface BaselineLatency {
  /** Feeds a window's fastest latency at `atMs`; answers the baseline. */
  update(rttMs: number, atMs: number): number;
}

/** Creates a baseline that rises after `periodMs` spent at `riseFactor` × it or more. */
export function createBaselineLatency(periodMs: number, riseFactor: number): BaselineLatency {
  let baseline = Number.POSITIVE_INFINITY;
  // The current stretch of slow windows: when it began, and its fastest latency.
  let slowSinceMs = Number.NaN;
  let fastestSlow = Number.POSITIVE_INFINITY;
  const endStretch = (newBaseline: number) => {
    baseline = newBaseline;
    slowSinceMs = Number.NaN;
    fastestSlow = Number.POSITIVE_INFINITY;
  };
  return {
    update(rttMs, atMs) {
      if (!(rttMs >= riseFactor * baseline)) endStretch(Math.min(baseline, rttMs));
      else {
        // Counted from the first slow window on, not from fixed period boundaries: a slowdown just after
        // a boundary would otherwise wait almost two periods.
        if (Number.isNaN(slowSinceMs)) slowSinceMs = atMs;
        fastestSlow = Math.min(fastestSlow, rttMs);
        if (atMs - slowSinceMs >= periodMs) endStretch(fastestSlow);
      }
      return baseline;
    },
  };
}
