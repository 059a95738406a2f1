/**
 * The gateway's token budget from the rules' `llm:` section: a token limiter per rule set (counters in the
 * service's store, so a reload keeps them), and the key of a request — its API key header, hashed.
 */
import { createHash } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { Clock, Store } from 'sluice';
import { createTokenLimiter, type LlmProvider, type TokenLimiter } from 'sluice/llm';
import type { RuleSet } from 'sluice/rules';
import { createLlmDebts, type LlmDebts } from './gateway-llm-debt.js';

/** The budget of one rule set. */
export interface LlmBudget {
  readonly provider: LlmProvider;
  readonly keyHeader: string;
  readonly limiter: TokenLimiter;
  /** Extras its settles could not take, carried to each key's next request. */
  readonly debts: LlmDebts;
}

/** Reservations of an unsettled stream lapse after this (charged in full): a crashed gateway leaks nothing. */
export const LLM_RESERVATION_TTL = '10m';

/** The counters' key of a request: the key header's value hashed (never stored or logged raw); undefined without one. */
export function llmKeyOf(req: IncomingMessage, header: string): string | undefined {
  const value = req.headers[header];
  const text = Array.isArray(value) ? value[0] : value;
  if (text === undefined || text === '') return undefined;
  return `llm:${createHash('sha256').update(text).digest('base64url').slice(0, 32)}`;
}

/** The budget of a rule set, and the reservations all budgets hold. */
export interface LlmBudgets {
  (ruleSet: RuleSet): LlmBudget | undefined;
  outstanding(): number;
}

/** The budget of the current rule set (the first domain with an `llm:` section), or undefined. */
export function createLlmBudgets(store: Store, clock: Clock): LlmBudgets {
  const budgets = new WeakMap<RuleSet, LlmBudget | null>();
  // Every budget that may still hold reservations: the current one, and older ones until they are empty.
  const live = new Set<LlmBudget>();
  let current: LlmBudget | undefined;
  const budgetOf = (ruleSet: RuleSet): LlmBudget | undefined => {
    const known = budgets.get(ruleSet);
    if (known !== undefined) return known ?? undefined;
    let budget: LlmBudget | null = null;
    for (const domain of ruleSet.domains.values()) {
      const llm = domain.llm;
      if (llm === undefined) continue;
      const limits = Object.fromEntries(
        Object.entries(llm.limits).map(([name, l]) => [name, { limit: l.limit, period: l.periodMs }]),
      );
      const limiter = createTokenLimiter({ ...limits, store, clock, reservationTtl: LLM_RESERVATION_TTL });
      budget = { provider: llm.provider, keyHeader: llm.keyHeader, limiter, debts: createLlmDebts() };
      break;
    }
    budgets.set(ruleSet, budget);
    current = budget ?? undefined;
    if (current !== undefined) live.add(current);
    return current;
  };
  const outstanding = () => {
    let n = 0;
    for (const b of live) {
      n += b.limiter.outstanding;
      if (b !== current && b.limiter.outstanding === 0) live.delete(b);
    }
    return n;
  };
  return Object.assign(budgetOf, { outstanding });
}
