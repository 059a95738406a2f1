/**
 * Vegas (after TCP Vegas): estimates the queue in front of the service from how far the latency sits
 * above the no-load latency, grows while that queue is short and shrinks when it is long. The no-load
 * latency moves up only after a whole period at twice it or more, so a service that became slower for
 * good is not mistaken for a queue for long.
 */
import { createBaselineLatency } from './baseline-latency.js';
import { fastestMs, inUse, type LimitAlgorithm } from './limit-algorithm.js';

/** Tuning of Vegas. */
export interface VegasOptions {
  /** How long latency must stay at twice the no-load latency or more before that moves up, in ms. @default 2000 */
  baselineMs?: number;
}

/** The queue estimates scale with log10 of the limit (as TCP Vegas' alpha and beta), never below 1. */
const log10 = (limit: number) => Math.max(1, Math.log10(limit));

/** Creates the Vegas step. */
export function createVegas(options: VegasOptions = {}): LimitAlgorithm {
  const baseline = createBaselineLatency(options.baselineMs ?? 2000, 2);
  return {
    update(limit, sample) {
      const rtt = Math.max(sample.rttMs, 0.001);
      const noLoadMs = baseline.update(fastestMs(sample), sample.atMs);
      const step = log10(limit);
      if (sample.dropped) return limit - step;
      if (!inUse(sample, limit)) return limit;
      const queue = Math.ceil(limit * (1 - noLoadMs / rtt));
      if (queue <= step) return limit + 6 * step;
      if (queue < 3 * step) return limit + step;
      if (queue > 6 * step) return limit - step;
      return limit;
    },
  };
}
