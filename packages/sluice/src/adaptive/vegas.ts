/**
 * Vegas (after TCP Vegas): estimates the queue in front of the service from how far the latency sits
 * above the no-load latency, grows while that queue is short and shrinks when it is long. The no-load
 * latency is the lowest window reading (a low percentile: one request of a faster route does not set
 * it); it moves up only after a whole period at twice it or more without falling, so a service that
 * became slower for good is not mistaken for a queue for long, and a draining queue is not taken for
 * the service's speed.
 */
import { createBaselineLatency } from './baseline-latency.js';
import { inUse, type LimitAlgorithm, lowMs, measuredMs } from './limit-algorithm.js';

/** Tuning of Vegas. */
export interface VegasOptions {
  /**
   * How long latency must stay at twice the no-load latency or more, without falling by a quarter,
   * before that moves up, in ms. @default 2000
   */
  baselineMs?: number;
}

/** The queue estimates scale with log10 of the limit (as TCP Vegas' alpha and beta), never below 1. */
const log10 = (limit: number) => Math.max(1, Math.log10(limit));

/** Creates the Vegas step. */
export function createVegas(options: VegasOptions = {}): LimitAlgorithm {
  const baseline = createBaselineLatency(options.baselineMs ?? 2000, 2);
  return {
    update(limit, sample) {
      const rtt = measuredMs(sample.rttMs);
      const noLoadMs = baseline.update(lowMs(sample), sample.atMs);
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
