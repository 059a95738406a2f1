/**
 * The no-load latency an algorithm compares with: the fastest seen, moved up only when a whole period
 * stayed beyond `riseFactor` times it — the service became slower for good. Re-learning it from any
 * later sample (as a periodic probe does) would take the very queue it must detect for the floor, and
 * the limit would creep upwards.
 */

/** A baseline latency. */
export interface BaselineLatency {
  /** Feeds a window's latency at `atMs`; answers the baseline. */
  update(rttMs: number, atMs: number): number;
}

/** Creates a baseline that may rise after `periodMs` spent beyond `riseFactor` × it. */
export function createBaselineLatency(periodMs: number, riseFactor: number): BaselineLatency {
  let baseline = Number.POSITIVE_INFINITY;
  let fastest = Number.POSITIVE_INFINITY;
  let periodStart = Number.NEGATIVE_INFINITY;
  return {
    update(rttMs, atMs) {
      if (atMs - periodStart >= periodMs) {
        if (fastest !== Number.POSITIVE_INFINITY && fastest > riseFactor * baseline) baseline = fastest;
        fastest = Number.POSITIVE_INFINITY;
        periodStart = atMs;
      }
      fastest = Math.min(fastest, rttMs);
      baseline = Math.min(baseline, rttMs);
      return baseline;
    },
  };
}
