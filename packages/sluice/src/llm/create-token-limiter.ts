/**
 * `createTokenLimiter`: requests and tokens per key for an LLM API — reserve a request's input and its
 * largest possible output up front (every dimension at once, all or nothing), settle the usage the
 * provider reported at the end.
 */
import type { Clock } from '../core/clock.js';
import { systemClock } from '../core/clock.js';
import type { Decision } from '../core/decision.js';
import { SluiceError } from '../core/errors.js';
import { type PolicyOptions, type ResolvedPolicy, resolvePolicy } from '../core/policy.js';
import { chargeItems } from '../limiter/charge.js';
import { combineDecisions, decisionWithResults } from '../limiter/combine.js';
import type { LimiterDecision } from '../limiter/limiter-decision.js';
import {
  createReservationBook,
  type Reservation,
  type ReservationAccount,
  type ReservationOptions,
  type SettleResult,
} from '../limiter/reservations.js';
import { createMemoryStore } from '../stores/memory/memory-store.js';
import type { Store, StoreItem } from '../stores/store.js';
import { BUDGET_TOOLS, type BudgetTools, budgetTools } from './budget-tools.js';
import { TOKEN_DIMENSIONS, type TokenDimension } from './token-dimension.js';
import { tokenHeaders } from './token-headers.js';
import { type CostLimitOptions, createPricing, MAX_COST } from './token-price.js';
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

/** A request's cost per dimension. */
export type TokenCost = Readonly<Record<TokenDimension, number>>;

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

const NOTHING: TokenCost = { requests: 0, inputTokens: 0, outputTokens: 0, totalTokens: 0, cost: 0 };

const validCount = (n: unknown) => typeof n === 'number' && Number.isInteger(n) && n >= 0 && n <= MAX_TOKEN_COUNT;
const validCost = (n: unknown) => typeof n === 'number' && Number.isInteger(n) && n >= 0 && n <= MAX_COST;
const TOKEN_COUNTS = TOKEN_DIMENSIONS.filter((d) => d !== 'cost');

/**
 * Creates a token limiter.
 *
 * @example
 * const budget = createTokenLimiter({ requests: { limit: 60, period: '1m' }, totalTokens: { limit: 25_000, period: '1m' } });
 * const r = await budget.reserve(apiKey, { inputTokens: estimateInputTokens(body), maxOutputTokens: body.max_tokens });
 * if (r.allowed) await r.settle(await readUsage(upstreamResponse, { provider: 'openai' }));
 */
export function createTokenLimiter(options: TokenLimiterOptions): TokenLimiter {
  const limits = TOKEN_DIMENSIONS.flatMap((name) => {
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
  const priced = options.cost === undefined ? undefined : createPricing(options.cost.price);
  /** A request's cost per dimension; a pricing function's bad answer becomes a cost no limit accepts. */
  const costOf = (inputTokens: number, outputTokens: number): TokenCost => {
    const cost = priced === undefined ? 0 : priced({ inputTokens, outputTokens });
    return { requests: 1, inputTokens, outputTokens, totalTokens: inputTokens + outputTokens, cost: cost as number };
  };
  const store = options.store ?? createMemoryStore();
  const clock = options.clock ?? systemClock;
  const items = (key: string, cost: TokenCost): StoreItem[] =>
    limits.map(({ name, policy }) => ({ key, policy, cost: cost[name] }));
  const decide = (key: string, decisions: readonly Decision[]): LimiterDecision =>
    decisionWithResults(
      combineDecisions(decisions),
      decisions.map((decision, i) => ({ name: (limits[i] as (typeof limits)[number]).name, key, decision })),
    );
  const giveBack = async (key: string, cost: TokenCost) => {
    const now = clock.now();
    for (const item of items(key, cost)) if (item.cost > 0) await store.refund(key, item.policy, item.cost, now);
  };

  const account: ReservationAccount<TokenCost> = {
    take: async (key, cost) => decide(String(key), await store.checkMany(items(String(key), cost), clock.now(), true)),
    giveBack: (key, cost) => giveBack(String(key), cost),
    async settle(k, reserved, actual) {
      const key = String(k);
      const now = clock.now();
      const charged = { ...actual } as Record<TokenDimension, number>;
      const refunded = { ...NOTHING };
      const over: { name: TokenDimension; item: StoreItem }[] = [];
      for (const { name, policy } of limits) {
        const diff = actual[name] - reserved[name];
        if (diff < 0) {
          await store.refund(key, policy, -diff, now);
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
      if (a === null || typeof a !== 'object' || !TOKEN_COUNTS.every((d) => validCount(a[d])))
        return `usage must have whole token counts from 0 to ${MAX_TOKEN_COUNT}`;
      return validCost(a.cost) ? undefined : `the usage's cost is not a whole number ≥ 0 (${String(a.cost)})`;
    },
    // cancel: the request did not happen, so even its request unit comes back.
    zero: NOTHING,
  };
  const book = createReservationBook(account, options, clock);
  const periods = Object.fromEntries(limits.map((l) => [l.name, l.policy.periodMs]));
  const actualOf = (usage: Usage): TokenCost =>
    usage !== null && typeof usage === 'object' ? costOf(usage.inputTokens, usage.outputTokens) : ({} as TokenCost);

  return {
    async reserve(key, { inputTokens, maxOutputTokens }) {
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
