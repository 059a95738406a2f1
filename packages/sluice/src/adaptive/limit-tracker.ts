/**
 * The limit of an adaptive limiter: released requests gathered into windows, one step of the algorithm
 * per window, the result kept within minLimit..maxLimit and used in whole places.
 */
import type { LimitAlgorithm, LimitSample } from './limit-algorithm.js';
import { createSampleWindow } from './sample-window.js';

/** The moving limit. */
export interface LimitTracker {
  /** The limit now, in whole requests. */
  readonly limit: number;
  /** Feeds a released request's sample (undefined: released without a measurement). */
  add(sample: LimitSample | undefined): void;
  /** Notes a request refused or queued for want of a place. */
  refused(): void;
}

/** Creates a limit starting at `initialLimit` that `algorithm` moves within `minLimit`..`maxLimit`. */
export function createLimitTracker(
  algorithm: LimitAlgorithm,
  initialLimit: number,
  minLimit: number,
  maxLimit: number,
): LimitTracker {
  const window = createSampleWindow();
  // The algorithm works on a real number; the limit admits whole requests.
  let estimate = initialLimit;
  let limit = initialLimit;
  return {
    get limit() {
      return limit;
    },
    add(sample) {
      const summary = sample && window.add(sample, limit);
      if (summary === undefined) return;
      estimate = Math.min(maxLimit, Math.max(minLimit, algorithm.update(estimate, summary)));
      limit = Math.floor(estimate);
    },
    refused: window.refused,
  };
}
