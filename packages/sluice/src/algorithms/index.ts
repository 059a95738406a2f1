/**
 * The algorithms' entry point: the six pure steps, and the table a store looks a policy's algorithm up in (all but the
 * sliding log, whose state is a log rather than three numbers).
 */
import type { AlgorithmName } from '../core/policy.js';
import { fixedWindow } from './fixed-window.js';
import { gcra } from './gcra.js';
import { leakyBucket } from './leaky-bucket.js';
import { slidingWindow } from './sliding-window.js';
import { tokenBucket } from './token-bucket.js';
import type { Algorithm } from './types.js';

export { MAX_DEBT } from './debt.js';
export { fixedWindow } from './fixed-window.js';
export { gcra } from './gcra.js';
export { leakyBucket } from './leaky-bucket.js';
export { SlidingLogState, slidingLog } from './sliding-log.js';
export { slidingWindow } from './sliding-window.js';
export { tokenBucket } from './token-bucket.js';
export type { Algorithm, Slots } from './types.js';

/** The five algorithms whose state is three numbers (sliding-log keeps a log instead). */
export const NUMERIC_ALGORITHMS: Readonly<Record<Exclude<AlgorithmName, 'sliding-log'>, Algorithm>> = {
  'fixed-window': fixedWindow,
  'sliding-window': slidingWindow,
  'token-bucket': tokenBucket,
  'leaky-bucket': leakyBucket,
  gcra,
};

/** Slots of numeric state per key. */
export const SLOT_WIDTH = 3;
