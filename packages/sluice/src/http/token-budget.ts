/**
 * The middleware's token budget (`tokenBudget`): after the rate limits pass, a request reserves its
 * estimated input and its largest possible output from a `sluice/llm` token limiter, or is refused
 * with 429; the adapter then feeds the response through a meter that settles what it really cost.
 */
import { SluiceError } from '../core/errors.js';
import type { LimiterDecision } from '../limiter/limiter-decision.js';
import type { BudgetTools } from '../llm/budget-tools.js';
import { checkProvider, MAX_TOKEN_COUNT } from '../llm/usage.js';
import type { ClientIpOptions } from './client-ip.js';
import { createIdentity } from './identity.js';
import type { HttpOutcome } from './outcome.js';
import { giveBackEarlier, tookEarlier } from './rate-limit-info.js';
import { createRenderer, type RenderOptions, rejectionInfo } from './rejection.js';
import type { Awaitable, RequestAccess } from './request.js';
import type { TokenBudgetOptions } from './token-budget-options.js';
import { createTokenMeter, type TokenMeter } from './token-meter.js';

/** The registered symbol sluice/llm keeps its body readers under (llm/budget-tools.ts). */
const TOOLS = Symbol.for('sluice.llm.budgetTools');

/** The token budget of one middleware. */
export interface TokenBudget<Req> {
  /** Reserves for a request the rate limits passed (`outcome`); refuses it, or hands back a meter. */
  admit(req: Req, outcome: HttpOutcome): Awaitable<HttpOutcome>;
}

const DEFAULT_MAX_OUTPUT = 4096;
/** Request bodies given as text or bytes are read up to this many characters (the framework bounds them first). */
const MAX_BODY_CHARS = 16 * 1024 * 1024;
const MAX_FIELDS = ['max_tokens', 'max_completion_tokens', 'max_output_tokens'] as const;

function fail(option: string, message: string): never {
  throw new SluiceError('ERR_SLUICE_INVALID_OPTION', `tokenBudget.${option}: ${message}`, {
    option: `tokenBudget.${option}`,
  });
}

function checkOptions<Req>(o: TokenBudgetOptions<Req>): number {
  if (o === null || typeof o !== 'object') fail('limiter', 'expected { limiter: createTokenLimiter({...}) }');
  const l = o.limiter as Partial<TokenBudgetOptions<Req>['limiter']> | undefined;
  if (typeof l?.reserve !== 'function' || typeof l.headers !== 'function' || !(TOOLS in l))
    fail('limiter', "expected a token limiter from sluice/llm's createTokenLimiter");
  for (const name of ['key', 'body', 'onSettle'] as const)
    if (o[name] !== undefined && typeof o[name] !== 'function') fail(name, 'expected a function');
  const max = o.defaultMaxOutputTokens ?? DEFAULT_MAX_OUTPUT;
  if (!Number.isInteger(max) || max < 0 || max > MAX_TOKEN_COUNT)
    fail('defaultMaxOutputTokens', `expected a whole number from 0 to ${MAX_TOKEN_COUNT} (got ${String(max)})`);
  return max;
}

/** The request body as an object (or text that is not JSON), from whatever the framework or option gave. */
function bodyValue(body: unknown): unknown {
  if (body instanceof Uint8Array) body = new TextDecoder().decode(body.subarray(0, MAX_BODY_CHARS));
  if (typeof body !== 'string') return body;
  const text = body.length > MAX_BODY_CHARS ? body.slice(0, MAX_BODY_CHARS) : body;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}

/** The output tokens a request may produce: its `max_tokens` when it is a sane count, else the default. */
export function maxOutputOf(body: unknown, fallback: number): number {
  if (body === null || typeof body !== 'object') return fallback;
  for (const field of MAX_FIELDS) {
    const n = (body as Record<string, unknown>)[field];
    // A hostile or mistaken count (negative, fractional, NaN, a string) does not pick the reservation.
    if (typeof n === 'number' && Number.isInteger(n) && n >= 0) return Math.min(n, MAX_TOKEN_COUNT);
  }
  return fallback;
}

/** The dimension that refused (the one with no room), for the 429's policy name. */
function refusedBy(decision: LimiterDecision): string {
  const r = decision.results?.find((x) => !x.decision.allowed) ?? decision.results?.[0];
  return `tokens:${r?.name ?? 'requests'}`;
}

/** Adds `extra` to `headers`; a field both have (the IETF `RateLimit` lists) lists the items of both. */
export function mergeHeaders(headers: readonly string[], extra: Record<string, string>): string[] {
  const out = [...headers];
  for (const [name, value] of Object.entries(extra)) {
    const at = out.findIndex((h, i) => i % 2 === 0 && h === name);
    if (at === -1) out.push(name, value);
    else out[at + 1] = `${out[at + 1]}, ${value}`;
  }
  return out;
}

/** Creates the budget stage of a middleware (`options`: the middleware's own, for identity and the 429). */
export function createTokenBudget<Req>(
  budget: TokenBudgetOptions<Req>,
  options: ClientIpOptions &
    RenderOptions<Req> & { statusCode?: number; peerAddress?: (req: Req) => string | undefined },
  access: RequestAccess<Req> & { body?(req: Req): Awaitable<unknown> },
): TokenBudget<Req> {
  const defaultMax = checkOptions(budget);
  const read = { provider: checkProvider(budget.provider ?? 'openai', 'tokenBudget.provider') };
  const limiter = budget.limiter;
  const tools = (limiter as unknown as Record<symbol, BudgetTools>)[TOOLS] as BudgetTools;
  const identity = createIdentity(options, access, options.peerAddress ?? access.peer);
  const render = createRenderer(options, (req: Req) => access.header(req, 'accept'));
  const status = options.statusCode ?? 429;
  const keyOf = (req: Req): Awaitable<string | null | undefined> => {
    if (budget.key !== undefined) return budget.key(req);
    const ip = identity.clientIp(req);
    return ip === '' ? 'unknown' : identity.ipKey(ip);
  };
  const bodyOf = budget.body ?? access.body?.bind(access);

  async function admit(req: Req, outcome: HttpOutcome): Promise<HttpOutcome> {
    const key = await keyOf(req);
    if (key === null || key === undefined) return outcome;
    const body = bodyValue(bodyOf === undefined ? undefined : await bodyOf(req));
    const inputTokens = Math.min(body === undefined ? 0 : tools.estimateInputTokens(body), MAX_TOKEN_COUNT);
    const reservation = await limiter.reserve(String(key), {
      inputTokens,
      maxOutputTokens: maxOutputOf(body, defaultMax),
    });
    const headers = mergeHeaders(outcome.headers, limiter.headers(reservation.decision));
    if (reservation.allowed) {
      const meter: TokenMeter = createTokenMeter(
        budget,
        tools.createUsageTap(read),
        req,
        String(key),
        reservation,
        inputTokens,
      );
      return { ...outcome, headers, meter };
    }
    // A refused request consumes nothing: what the rate limits took for it goes back.
    if (tookEarlier(outcome.info)) await giveBackEarlier(outcome.info);
    const rejection = rejectionInfo('limited', reservation.decision, refusedBy(reservation.decision), status);
    if (rejection.retryAfter !== null) headers.push('retry-after', String(rejection.retryAfter));
    const { body: text, contentType } = render(rejection, req);
    return { ...outcome, pass: false, status: rejection.status, headers, body: text, contentType, rejection };
  }

  return {
    admit: (req, outcome) => (outcome.pass ? admit(req, outcome) : outcome),
  };
}
