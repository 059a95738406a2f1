/**
 * The token bucket algorithm: the bucket step of bucket.ts without shaping, a burst up to the bucket's capacity and
 * then the steady refill rate.
 */
import { createBucket } from './bucket.js';

/**
 * Token bucket: holds up to `burst` tokens, refilled at `limit` per `period`; a request takes `cost`
 * tokens. Allows a burst, then the steady rate.
 */
export const tokenBucket = createBucket('token-bucket', false);
