/**
 * A settle's extra taken as debt: the store's charge on every limit of a request at once, the failure
 * policy answering when the store fails, and an ordinary check — the extra taken only as far as it fits — on a store
 * that has no charge (a multi-region store).
 */
import type { Decision } from '../core/decision.js';
import type { Store, StoreItem } from '../stores/store.js';
import { type FailurePolicy, isStoreFailure } from './failure-policy.js';
import type { LimiterDecision } from './limiter-decision.js';
import type { LimiterKey } from './limiter-key.js';

/** A limiter's charge on every limit at once (createLimiter's; see ReservableLimiter.charge). */
export type LimiterCharge = (
  key: LimiterKey,
  options: { cost: number },
) => Promise<{ decision: LimiterDecision; took: boolean }>;

/** Each limiter's charge, so `createReservations(limiter)` charges debt as `limiter.reserve` does. */
const charges = new WeakMap<object, LimiterCharge>();

/** Registers the charge of a limiter made by createLimiter. */
export function registerCharge(limiter: object, charge: LimiterCharge): void {
  charges.set(limiter, charge);
}

/** The charge of a limiter made by createLimiter; undefined for any other. */
export const chargeOf = (limiter: object): LimiterCharge | undefined => charges.get(limiter);

/** What a charge did: a decision per item and whether the whole cost was taken. */
export interface ChargeOutcome {
  readonly decisions: Decision[];
  /** True when the store took every item's cost; false when it was dropped (a failure, or a check that did not fit). */
  readonly took: boolean;
}

/**
 * Takes every item's cost even past its limit, all items in one step of the store. Each decision says whether its
 * key is now in debt (`allowed: false`) and for how long (`retryAfterMs`). Without a `failure` policy a store's
 * failure is thrown.
 */
export async function chargeItems(
  store: Store,
  failure: FailurePolicy | undefined,
  items: readonly StoreItem[],
  nowMs: number,
): Promise<ChargeOutcome> {
  if (items.length === 0) return { decisions: [], took: true };
  try {
    if (store.charge === undefined) {
      // No debt on this store: today's behaviour, the extra taken only while every limit has room for it.
      const decisions = await store.checkMany(items, nowMs, true);
      return { decisions, took: decisions.every((d) => d.allowed) };
    }
    return { decisions: await store.charge(items, nowMs), took: true };
  } catch (error) {
    if (failure === undefined || !isStoreFailure(error)) throw error;
    // The store is down: the failure policy answers (insurance takes it in its stand-in, as far as it fits).
    const decisions = failure.decide(items, nowMs, true);
    return { decisions, took: failure.mode === 'insurance' && decisions.every((d) => d.allowed) };
  }
}
