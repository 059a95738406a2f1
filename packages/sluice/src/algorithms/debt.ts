/**
 * How far a forced charge (a settle's extra: the request already ran) may take a key past its limit: far enough for
 * any real overshoot, near enough that every sum the algorithms and the Redis scripts compute stays an exact double.
 */

/**
 * The most debt a key may owe, in the algorithm's own unit: ticks for the buckets and GCRA (with MAX_MAGNITUDE of
 * capacity and `now × scale` below 2^52.5 until 2100, a TAT stays below 2^53), units for a fixed window, units ×
 * period for a sliding window. A sliding log owes at most one more limit (its log holds at most 2 × limit units,
 * which the Redis log's 16-bit units field keeps).
 */
export const MAX_DEBT = 2 ** 50;
