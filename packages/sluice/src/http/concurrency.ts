/**
 * The middleware's `concurrency` option: a limit on one key's requests in flight, each holding a place from when it
 * passes the rate limits until its response is sent, and the headers that describe it.
 */
import type { Clock } from '../core/clock.js';
import { SluiceError } from '../core/errors.js';
import { type ConcurrencyLimiterOptions, createConcurrencyLimiter } from '../limiter/concurrency-limiter.js';
import type { Store } from '../stores/store.js';
import { type LimitHeaderInfo, toSfString } from './headers.js';
import type { ConcurrencyOptions } from './options.js';
import type { AppliedLimitInfo } from './rate-limit-info.js';

/** A place taken, and how to give it back. */
export interface Inflight {
  readonly applied: AppliedLimitInfo;
  release(): Promise<void>;
}

/** Takes a place for a key: the place when there is one, else the rejection's applied limit. */
export type TakePlace = (
  key: string,
) => Promise<{ ok: true; inflight: Inflight } | { ok: false; applied: AppliedLimitInfo }>;

/** What a store failure means for a place: the middleware's own `fail` and `insuranceShare`. */
export type InflightFailure = Pick<ConcurrencyLimiterOptions, 'fail' | 'insuranceShare'>;

/** Compiles the `concurrency` option; undefined when not set. */
export function createInflightLimit(
  option: number | ConcurrencyOptions | undefined,
  store: Store,
  clock: Clock | undefined,
  scope: string,
  failure: InflightFailure,
): TakePlace | undefined {
  if (option === undefined) return undefined;
  const o: ConcurrencyOptions = typeof option === 'number' ? { limit: option } : option;
  if (o === null || typeof o !== 'object') {
    throw new SluiceError('ERR_SLUICE_INVALID_OPTION', 'concurrency: expected a number or { limit, lease, name }', {
      option: 'concurrency',
    });
  }
  const name = o.name ?? 'inflight';
  const limiter = createConcurrencyLimiter({
    limit: o.limit,
    ...(o.lease === undefined ? {} : { lease: o.lease }),
    store,
    ...(clock === undefined ? {} : { clock }),
    // A place is answered as the rate limits are when the store fails: fail: 'closed' is closed for both.
    ...(failure.fail === undefined ? {} : { fail: failure.fail }),
    ...(failure.insuranceShare === undefined ? {} : { insuranceShare: failure.insuranceShare }),
  });
  const quotedName = toSfString(name, 'concurrency.name');
  const header: LimitHeaderInfo = {
    quotedName,
    windowS: 0,
    limit: o.limit,
    quota: o.limit,
    limitText: String(o.limit),
    // draft-11 §2.1: the quota unit of in-flight requests; no window, and no `t` (a place frees when
    // some request ends, which nobody can tell in advance).
    policyText: `${quotedName};q=${o.limit};qu="concurrent-requests"`,
    algorithm: undefined,
    periodMs: 0,
    concurrent: true,
  };
  return async (key) => {
    const counted = `${scope}~${key}`;
    const decision = await limiter.acquire(counted);
    const applied: AppliedLimitInfo = { name, header, decision, key };
    const lease = decision.lease;
    if (!decision.allowed || lease === undefined) return { ok: false, applied };
    return {
      ok: true,
      inflight: {
        applied,
        release: async () => void (await limiter.release(lease)),
      },
    };
  };
}
