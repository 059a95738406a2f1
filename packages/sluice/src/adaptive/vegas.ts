/**
 * Vegas (after TCP Vegas): estimates the queue in front of the service from how far the latency sits
 * above the no-load latency, grows while that queue is short and shrinks when it is long. The no-load
 * latency is re-learned every so many samples, so a service that became slower for good is not
 * mistaken for a queue forever.
 */
import type { LimitAlgorithm } from './limit-algorithm.js';

/** Tuning of Vegas. */
export interface VegasOptions {
  /** The no-load latency is forgotten and re-measured after this many samples × the limit. @default 30 */
  probeMultiplier?: number;
}

/** The queue estimates scale with log10 of the limit (as TCP Vegas' alpha and beta), never below 1. */
const log10 = (limit: number) => Math.max(1, Math.log10(limit));

/** Creates the Vegas step. */
export function createVegas(options: VegasOptions = {}): LimitAlgorithm {
  const probeMultiplier = options.probeMultiplier ?? 30;
  let noLoadMs = Number.POSITIVE_INFINITY;
  let sinceProbe = 0;
  return {
    update(limit, sample) {
      if (++sinceProbe > probeMultiplier * limit) {
        // Re-learn the floor from the next sample: the service's unloaded speed may have changed.
        sinceProbe = 0;
        noLoadMs = sample.rttMs;
        return limit;
      }
      if (sample.rttMs > 0 && sample.rttMs < noLoadMs) noLoadMs = sample.rttMs;
      const step = log10(limit);
      if (sample.dropped) return limit - step;
      if (sample.inFlight * 2 < limit) return limit;
      const queue = Math.ceil(limit * (1 - noLoadMs / Math.max(sample.rttMs, noLoadMs)));
      if (queue <= step) return limit + 6 * step;
      if (queue < 3 * step) return limit + step;
      if (queue > 6 * step) return limit - step;
      return limit;
    },
  };
}
