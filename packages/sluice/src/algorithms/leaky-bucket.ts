/**
 * The leaky bucket algorithm: the bucket step of bucket.ts with shaping on, so an admitted request is also told how
 * long to wait for its turn.
 */
import { createBucket } from './bucket.js';

/**
 * Leaky bucket (as a queue): a queue of `burst` places draining at `limit` per `period`. A request is
 * admitted if it fits in the queue; `delayMs` says how long to hold it before its turn, so a caller
 * that waits `delayMs` sends at a perfectly smooth rate (shaping).
 */
export const leakyBucket = createBucket('leaky-bucket', true);
