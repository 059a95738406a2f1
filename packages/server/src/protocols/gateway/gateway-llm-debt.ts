/**
 * Tokens a key used past what its settles could take: a settle whose extra did not fit left it uncharged,
 * so the key's next reservation carries it — the key waits until its window holds the debt too, and over
 * time nobody gets more than the limit plus the extras of the requests in flight when it filled.
 */
import {
  MAX_TOKEN_COUNT,
  type TokenLimiter,
  type TokenReservation,
  type TokenSettleResult,
  type Usage,
} from 'sluice/llm';

/** Keys remembered at most; past it the oldest debt is forgotten (a bound on a flood of keys). */
export const MAX_DEBTORS = 100_000;

/** What a key owes, in tokens. */
export interface Owed {
  readonly inputTokens: number;
  readonly outputTokens: number;
}

const NONE: Owed = { inputTokens: 0, outputTokens: 0 };

/** Debts per key, in this process. */
export interface LlmDebts {
  /** Takes `key`'s debt out (its next reservation carries it). */
  take(key: string): Owed;
  /** Adds to `key`'s debt. */
  owe(key: string, owed: Owed): void;
  readonly size: number;
}

/** Creates an empty set of debts, holding at most `maxKeys` keys. */
export function createLlmDebts(maxKeys = MAX_DEBTORS): LlmDebts {
  const debts = new Map<string, Owed>();
  return {
    take(key) {
      const owed = debts.get(key);
      if (owed === undefined) return NONE;
      debts.delete(key);
      return owed;
    },
    owe(key, owed) {
      if (owed.inputTokens <= 0 && owed.outputTokens <= 0) return;
      const had = debts.get(key) ?? NONE;
      debts.delete(key);
      debts.set(key, {
        inputTokens: Math.min(MAX_TOKEN_COUNT, had.inputTokens + owed.inputTokens),
        outputTokens: Math.min(MAX_TOKEN_COUNT, had.outputTokens + owed.outputTokens),
      });
      if (debts.size > maxKeys) debts.delete(debts.keys().next().value as string);
    },
    get size() {
      return debts.size;
    },
  };
}

/** A reservation that carries its key's debt: settle and cancel keep the debt charged or owed. */
export interface OwingReservation {
  readonly reservation: TokenReservation;
  settle(usage: Usage): Promise<TokenSettleResult>;
  cancel(): Promise<TokenSettleResult>;
}

/** Reserves `request` plus `key`'s debt; a refused reservation leaves the debt owed. */
export async function reserveOwing(
  limiter: TokenLimiter,
  debts: LlmDebts,
  key: string,
  request: { inputTokens: number; maxOutputTokens: number },
): Promise<OwingReservation> {
  const owed = debts.take(key);
  const reservation = await limiter.reserve(key, {
    inputTokens: Math.min(MAX_TOKEN_COUNT, request.inputTokens + owed.inputTokens),
    maxOutputTokens: Math.min(MAX_TOKEN_COUNT, request.maxOutputTokens + owed.outputTokens),
  });
  if (!reservation.allowed) debts.owe(key, owed);
  return {
    reservation,
    async settle(usage) {
      const actual = {
        inputTokens: Math.min(MAX_TOKEN_COUNT, usage.inputTokens + owed.inputTokens),
        outputTokens: Math.min(MAX_TOKEN_COUNT, usage.outputTokens + owed.outputTokens),
      };
      const result = await reservation.settle(actual);
      if (result.ok) debts.owe(key, uncharged(actual, result.charged));
      else if (result.code === 'ERR_SLUICE_INVALID_COST') debts.owe(key, owed);
      return result;
    },
    async cancel() {
      const result = await reservation.cancel();
      // The request did not happen; the debt it carried still stands.
      if (result.ok) debts.owe(key, owed);
      return result;
    },
  };
}

/** What a settle left uncharged: its extra over the reservation that the limits would not take. */
function uncharged(actual: Owed, charged: Readonly<Record<string, number>>): Owed {
  const input = Math.max(0, actual.inputTokens - (charged.inputTokens ?? 0));
  const output = Math.max(0, actual.outputTokens - (charged.outputTokens ?? 0));
  const total = Math.max(0, actual.inputTokens + actual.outputTokens - (charged.totalTokens ?? 0));
  // Only a total limit refused: the debt goes on input, so the next reservation's total carries it.
  return { inputTokens: input + Math.max(0, total - input - output), outputTokens: output };
}
