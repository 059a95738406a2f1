import { createBucket } from './bucket.js';

/**
 * Token bucket: holds up to `burst` tokens, refilled at `limit` per `period`; a request takes `cost`
 * tokens. Allows a burst, then the steady rate.
 */
export const tokenBucket = createBucket('token-bucket', false);
