/**
 * What a token reservation takes from the store and gives back: every dimension's limit at once, a
 * settle's refund per dimension, and its extra charged past the limits (debt) on every dimension together.
 */
import type { Clock } from '../core/clock.js';
import type { Decision } from '../core/decision.js';
import type { ResolvedPolicy } from '../core/policy.js';
import { chargeItems } from '../limiter/charge.js';
import { combineDecisions, decisionWithResults } from '../limiter/combine.js';
import type { LimiterDecision } from '../limiter/limiter-decision.js';
import type { ReservationAccount } from '../limiter/reservations.js';
import type { Store, StoreItem } from '../stores/store.js';
import type { TokenDimension } from './token-dimension.js';
import { MAX_COST } from './token-price.js';
import { MAX_TOKEN_COUNT } from './usage.js';

/** A request's cost per dimension. */
export type TokenCost = Readonly<Record<TokenDimension, number>>;

/** One dimension's limit, its policy's id prefixed so it never shares a counter with a plain limiter. */
export interface TokenLimit {
  readonly name: TokenDimension;
  readonly policy: ResolvedPolicy;
}

/** The cost of nothing: what a cancelled reservation is settled at (even its request unit comes back). */
export const NOTHING: TokenCost = { requests: 0, inputTokens: 0, outputTokens: 0, totalTokens: 0, cost: 0 };

export const validCount = (n: unknown) =>
  typeof n === 'number' && Number.isInteger(n) && n >= 0 && n <= MAX_TOKEN_COUNT;
export const validCost = (n: unknown) => typeof n === 'number' && Number.isInteger(n) && n >= 0 && n <= MAX_COST;
/** The counts a usage gives: the total is their sum, so it may reach twice a count's bound. */
const TOKEN_COUNTS = ['requests', 'inputTokens', 'outputTokens'] as const;
const validTotal = (a: Partial<TokenCost>) =>
  typeof a.totalTokens === 'number' && a.totalTokens >= 0 && a.totalTokens <= 2 * MAX_TOKEN_COUNT;

/** The reservation account of `limits` on `store`. */
export function tokenAccount(limits: readonly TokenLimit[], store: Store, clock: Clock): ReservationAccount<TokenCost> {
  const items = (key: string, cost: TokenCost): StoreItem[] =>
    limits.map(({ name, policy }) => ({ key, policy, cost: cost[name] }));
  const decide = (key: string, decisions: readonly Decision[]): LimiterDecision =>
    decisionWithResults(
      combineDecisions(decisions),
      decisions.map((decision, i) => ({ name: (limits[i] as (typeof limits)[number]).name, key, decision })),
    );
  // `takenAtMs`: when the reservation took its cost, so the units go back only to the window that counted them.
  const giveBack = async (key: string, cost: TokenCost, takenAtMs: number | undefined) => {
    const now = clock.now();
    for (const item of items(key, cost))
      if (item.cost > 0) await store.refund(key, item.policy, item.cost, now, takenAtMs);
  };

  const account: ReservationAccount<TokenCost> = {
    take: async (key, cost) => decide(String(key), await store.checkMany(items(String(key), cost), clock.now(), true)),
    giveBack: (key, cost, takenAtMs) => giveBack(String(key), cost, takenAtMs),
    async settle(k, reserved, actual, takenAtMs) {
      const key = String(k);
      const now = clock.now();
      const charged = { ...actual } as Record<TokenDimension, number>;
      const refunded = { ...NOTHING };
      const over: { name: TokenDimension; item: StoreItem }[] = [];
      for (const { name, policy } of limits) {
        const diff = actual[name] - reserved[name];
        if (diff < 0) {
          await store.refund(key, policy, -diff, now, takenAtMs);
          refunded[name] = -diff;
        } else if (diff > 0) over.push({ name, item: { key, policy, cost: diff } });
      }
      if (over.length === 0) return { charged, refunded, extra: undefined };
      // The request already ran: its extra is owed on every dimension at once, past the limits if need be (debt,
      // which later requests wait out). A store without charge takes it only while every limit has room.
      const { decisions, took } = await chargeItems(
        store,
        undefined,
        over.map((o) => o.item),
        now,
      );
      if (!took) for (const { name } of over) charged[name] = reserved[name];
      const extra = decisionWithResults(
        combineDecisions(decisions),
        decisions.map((decision, i) => ({ name: (over[i] as (typeof over)[number]).name, key, decision })),
      );
      return { charged, refunded, extra };
    },
    invalid: (actual) => {
      const a = actual as Partial<TokenCost> | null;
      if (a === null || typeof a !== 'object' || !TOKEN_COUNTS.every((d) => validCount(a[d])) || !validTotal(a))
        return `usage must have whole token counts from 0 to ${MAX_TOKEN_COUNT}`;
      return validCost(a.cost) ? undefined : `the usage's cost is not a whole number ≥ 0 (${String(a.cost)})`;
    },
    // cancel: the request did not happen, so even its request unit comes back.
    zero: NOTHING,
  };
  return account;
}
