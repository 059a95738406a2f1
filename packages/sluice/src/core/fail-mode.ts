/**
 * What a limiter does when its store cannot answer (Redis down, timed out, erroring):
 * - `'open'`: allow the request (the decision says `degraded: true`), so an outage of the limiter
 *   is not an outage of the service;
 * - `'closed'`: reject it with `reason: 'store-unavailable'`, for limits that protect something
 *   that must not be overrun (logins, payments);
 * - `'insurance'`: decide with an in-memory limiter of the same policy (scaled by `insuranceShare`)
 *   until the store is back, so each process still enforces its share of the limit.
 */
export type FailMode = 'open' | 'closed' | 'insurance';
