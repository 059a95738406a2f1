/**
 * AIMD: additive increase, multiplicative decrease. Grows by one while the limit is in use and cuts
 * by a ratio on every drop (or a request slower than the latency bound); the simplest, loss-based.
 */
import { inUse, type LimitAlgorithm } from './limit-algorithm.js';

/** Tuning of AIMD. */
export interface AimdOptions {
  /** What the limit is multiplied by on a drop. @default 0.9 */
  backoffRatio?: number;
  /** A success slower than this counts as a drop. @default 5000 */
  latencyBoundMs?: number;
}

/** Creates the AIMD step. */
export function createAimd(options: AimdOptions = {}): LimitAlgorithm {
  const backoff = options.backoffRatio ?? 0.9;
  const boundMs = options.latencyBoundMs ?? 5000;
  return {
    update(limit, sample) {
      if (sample.dropped || sample.rttMs > boundMs) return limit * backoff;
      return inUse(sample, limit) ? limit + 1 : limit;
    },
  };
}
