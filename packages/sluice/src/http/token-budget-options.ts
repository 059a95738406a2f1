/** The middleware's `tokenBudget` option: a token limiter, whose key, and how to read the request and the response. */
import type { TokenLimiter, TokenSettleResult } from '../llm/create-token-limiter.js';
import type { LlmProvider, Usage } from '../llm/usage.js';
import type { Awaitable } from './request.js';

/** What the middleware settled a request's reservation with, once its response ended. */
export interface TokenBudgetSettlement<Req> {
  req: Req;
  /** The reservation's key. */
  key: string;
  /** What was charged: the provider's usage, or what was produced (see `source`). */
  usage: Usage;
  /**
   * Where `usage` came from: `'reported'` (the body's usage), `'produced'` (no usage in the body — a
   * client that left mid-stream, an upstream that dropped or sent none: the input estimate, or the
   * stream's own input count, plus output estimated from the text that passed).
   */
  source: 'reported' | 'produced';
  /** True when the client went away before the response was done. */
  aborted: boolean;
  /** The limiter's answer (a settle is a value, never an exception). */
  result: TokenSettleResult;
}

/** Options of the middleware's `tokenBudget`. */
export interface TokenBudgetOptions<Req> {
  /** The budget, from `sluice/llm`'s `createTokenLimiter` (its store holds the counters). */
  limiter: TokenLimiter;
  /** Whose response bodies the handler sends: read for the usage they report. @default 'openai' */
  provider?: LlmProvider;
  /**
   * The key a request's tokens count under (an API key, a user, a team); `null`/`undefined` skips the
   * budget for the request. @default the client IP key, as the rate limits use
   */
  key?: (req: Req) => Awaitable<string | null | undefined>;
  /**
   * The request body, parsed (an OpenAI or Anthropic request object, or its JSON text), for the input
   * estimate and `max_tokens`. @default the body the framework parsed (Express `req.body`, Fastify
   * `request.body`, Koa `ctx.request.body`, Hono `c.req.json()`); none for `sluice/node`
   */
  body?: (req: Req) => Awaitable<unknown>;
  /**
   * The output tokens reserved when the request names no `max_tokens` (`max_completion_tokens`,
   * `max_output_tokens`). @default 4096
   */
  defaultMaxOutputTokens?: number;
  /** Called once per admitted request when its reservation is settled, e.g. to log what it cost. */
  onSettle?: (settlement: TokenBudgetSettlement<Req>) => void;
}
