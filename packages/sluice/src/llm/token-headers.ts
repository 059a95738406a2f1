/**
 * The response headers of a token limiter's decision: OpenAI's `x-ratelimit-{limit,remaining,reset}-
 * {requests,tokens}` beside the IETF draft's `RateLimit-Policy` and `RateLimit`, one item per limit.
 */
import type { LimiterDecision } from '../limiter/limiter-decision.js';
import type { TokenDimension } from './token-dimension.js';

const IETF_NAME: Record<TokenDimension, string> = {
  requests: 'requests',
  inputTokens: 'input_tokens',
  outputTokens: 'output_tokens',
  totalTokens: 'total_tokens',
  cost: 'cost',
};

/** OpenAI writes resets as a duration (`1s`, `6m0s`); so does this. */
function openAiDuration(ms: number): string {
  const s = Math.ceil(ms / 1000);
  return s >= 60 ? `${Math.floor(s / 60)}m${s % 60}s` : `${s}s`;
}

/**
 * Headers for a token limiter's decision, as a name → value record. The `-tokens` headers describe
 * `totalTokens` when configured, else the input or output limit with the least left (the one a client
 * runs into first). `periodMs` per dimension gives `RateLimit-Policy`'s window.
 */
export function tokenHeaders(
  decision: LimiterDecision,
  periodMs: Readonly<Partial<Record<TokenDimension, number>>>,
): Record<string, string> {
  const results = decision.results ?? [];
  const headers: Record<string, string> = {};
  const byName = new Map(results.map((r) => [r.name as TokenDimension, r.decision]));
  const requests = byName.get('requests');
  const tokens =
    byName.get('totalTokens') ??
    [byName.get('inputTokens'), byName.get('outputTokens')]
      .filter((d) => d !== undefined)
      .sort((a, b) => a.remaining - b.remaining)[0];
  for (const [suffix, d] of [
    ['requests', requests],
    ['tokens', tokens],
  ] as const) {
    if (d === undefined) continue;
    headers[`x-ratelimit-limit-${suffix}`] = String(d.limit);
    headers[`x-ratelimit-remaining-${suffix}`] = String(d.remaining);
    headers[`x-ratelimit-reset-${suffix}`] = openAiDuration(d.resetMs);
  }
  const named = results.map((r) => ({
    name: IETF_NAME[r.name as TokenDimension] ?? r.name,
    d: r.decision,
    dim: r.name as TokenDimension,
  }));
  headers['ratelimit-policy'] = named
    .map(({ name, d, dim }) => `"${name}";q=${d.limit};w=${Math.ceil((periodMs[dim] ?? 0) / 1000)}`)
    .join(', ');
  headers.ratelimit = named
    .map(({ name, d }) => `"${name}";r=${d.remaining};t=${Math.ceil(d.resetMs / 1000)}`)
    .join(', ');
  return headers;
}
