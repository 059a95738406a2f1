/**
 * `createTokenLimiter`: requests and tokens per key for an LLM API — reserve a request's input and its
 * largest possible output up front (every dimension at once, all or nothing), settle the usage the
 * provider reported at the end.
 */
import type { Clock } from '../core/clock.js';
import { systemClock } from '../core/clock.js';
import { SluiceError } from '../core/errors.js';
import { type PolicyOptions, type ResolvedPolicy, resolvePolicy } from '../core/policy.js';
import type { LimiterDecision } from '../limiter/limiter-decision.js';
import {
  createReservationBook,
  type Reservation,
  type ReservationOptions,
  type SettleResult,
} from '../limiter/reservations.js';
import { createMemoryStore } from '../stores/memory/memory-store.js';
import type { Store } from '../stores/store.js';
import { BUDGET_TOOLS, type BudgetTools, budgetTools } from './budget-tools.js';
import { type TokenCost, type TokenLimit, tokenAccount, validCost, validCount } from './token-account.js';
import { TOKEN_DIMENSIONS, type TokenDimension } from './token-dimension.js';
import { tokenHeaders } from './token-headers.js';
import { type CostLimitOptions, createPricing } from './token-price.js';
import { MAX_TOKEN_COUNT, type Usage } from './usage.js';

/** Options of {@link createTokenLimiter}: any subset of the four limits. */
export interface TokenLimiterOptions extends ReservationOptions {
  requests?: PolicyOptions;
  inputTokens?: PolicyOptions;
  outputTokens?: PolicyOptions;
  totalTokens?: PolicyOptions;
  /**
   * A budget in money (or any unit): `{ limit, period, price }`, `price` per token or a function of the
   * usage; a request reserves the price of its input and max output, and settles the price of its usage.
   */
  cost?: CostLimitOptions;
  /** @default a new memory store */
  store?: Store;
  clock?: Clock;
}

export type { TokenCost } from './token-account.js';

/** What a token reservation is settled with. */
export type TokenSettleResult = SettleResult<TokenCost>;

/** A token limiter. */
export interface TokenLimiter {
  /** Takes one request, `inputTokens` and `maxOutputTokens` (the request's `max_tokens`) from every limit, or nothing. */
  reserve(key: string, request: { inputTokens: number; maxOutputTokens: number }): Promise<TokenReservation>;
  /** Settles by id with the reported usage (a process that reserved may differ from the one that settles). */
  settle(id: string, usage: Usage): Promise<TokenSettleResult>;
  cancel(id: string): Promise<TokenSettleResult>;
  sweep(): Promise<number>;
  readonly outstanding: number;
  /** The dimensions configured, in order. */
  readonly dimensions: readonly TokenDimension[];
  /** `x-ratelimit-*-{requests,tokens}` and the IETF `RateLimit`/`RateLimit-Policy` for a decision of this limiter. */
  headers(decision: LimiterDecision): Record<string, string>;
  /** The body readers, for the middleware's `tokenBudget` (internal). */
  readonly [BUDGET_TOOLS]: BudgetTools;
}

/** A reservation of tokens: its decision carries one result per dimension (named as the dimension). */
export interface TokenReservation extends Omit<Reservation<TokenCost>, 'settle'> {
  settle(usage: Usage): Promise<TokenSettleResult>;
}

/** Each dimension the options name, as a limit; at least one. */
function tokenLimits(options: TokenLimiterOptions): TokenLimit[] {
  const limits: TokenLimit[] = TOKEN_DIMENSIONS.flatMap((name) => {
    const given = options[name];
    if (given === undefined) return [];
    const { price: _price, ...policy } = given as CostLimitOptions;
    const p = resolvePolicy(policy, `${name}.`);
    return [{ name, policy: { ...p, id: `tokens:${name}~${p.id}` } as ResolvedPolicy }];
  });
  if (limits.length === 0)
    throw new SluiceError(
      'ERR_SLUICE_INVALID_OPTION',
      'createTokenLimiter needs at least one of requests, inputTokens, outputTokens, totalTokens, cost (each { limit, period })',
    );
  return limits;
}

/**
 * Creates a token limiter.
 *
 * @example
 * const budget = createTokenLimiter({ requests: { limit: 60, period: '1m' }, totalTokens: { limit: 25_000, period: '1m' } });
 * const r = await budget.reserve(apiKey, { inputTokens: estimateInputTokens(body), maxOutputTokens: body.max_tokens });
 * if (r.allowed) await r.settle(await readUsage(upstreamResponse, { provider: 'openai' }));
 */
export function createTokenLimiter(options: TokenLimiterOptions): TokenLimiter {
  const limits = tokenLimits(options);
  const priced = options.cost === undefined ? undefined : createPricing(options.cost.price);
  /** A request's cost per dimension; a pricing function's bad answer becomes a cost no limit accepts. */
  const costOf = (inputTokens: number, outputTokens: number): TokenCost => {
    const cost = priced === undefined ? 0 : priced({ inputTokens, outputTokens });
    return { requests: 1, inputTokens, outputTokens, totalTokens: inputTokens + outputTokens, cost: cost as number };
  };
  const store = options.store ?? createMemoryStore();
  const clock = options.clock ?? systemClock;
  const account = tokenAccount(limits, store, clock);
  const book = createReservationBook(account, options, clock);
  const periods = Object.fromEntries(limits.map((l) => [l.name, l.policy.periodMs]));
  const actualOf = (usage: Usage): TokenCost =>
    usage !== null && typeof usage === 'object' ? costOf(usage.inputTokens, usage.outputTokens) : ({} as TokenCost);

  return {
    async reserve(key, request) {
      const { inputTokens, maxOutputTokens } = request ?? {};
      for (const [name, n] of [
        ['inputTokens', inputTokens],
        ['maxOutputTokens', maxOutputTokens],
      ] as const)
        if (!validCount(n))
          throw new SluiceError(
            'ERR_SLUICE_INVALID_COST',
            `${name} must be a whole number from 0 to ${MAX_TOKEN_COUNT} (got ${String(n)})`,
            { option: name },
          );
      const cost = costOf(inputTokens, maxOutputTokens);
      if (!validCost(cost.cost))
        throw new SluiceError('ERR_SLUICE_INVALID_COST', String(cost.cost), { option: 'cost.price' });
      const r = await book.reserve(key, { cost });
      return { ...r, settle: (usage: Usage) => r.settle(actualOf(usage)) };
    },
    settle: (id, usage) => book.settle(id, actualOf(usage)),
    cancel: (id) => book.cancel(id),
    sweep: () => book.sweep(),
    get outstanding() {
      return book.outstanding;
    },
    dimensions: limits.map((l) => l.name),
    headers: (decision) => tokenHeaders(decision, periods),
    [BUDGET_TOOLS]: budgetTools,
  };
}
