/**
 * Parsing a rule file's `llm:` section: the gateway's token budget — which provider's bodies to read,
 * the request header a key is taken from (hashed before it is stored), and the limits per key.
 */
import { isMap } from 'yaml';
import { parseDuration } from '../../core/duration.js';
import { isSluiceError } from '../../core/errors.js';
import { RULE_ISSUE_CODES as C } from '../codes.js';
import type { LlmRules } from '../types.js';
import type { Field, Reader } from './reader.js';

const LIMIT_NAMES = {
  requests: 'requests',
  input_tokens: 'inputTokens',
  output_tokens: 'outputTokens',
  total_tokens: 'totalTokens',
} as const;
const MAX_LIMIT = 1_000_000_000;
/** Header names are short tokens (RFC 9110 §5.1); bounded so nothing odd reaches a lookup. */
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9a-z-]{1,64}$/;

/** Validates the top-level `llm:` section (see docs/llm.md); undefined when absent or invalid. */
export function parseLlm(r: Reader, field: Field | undefined): LlmRules | undefined {
  if (field?.value === undefined) return undefined;
  const f = r.fields(field.value, 'llm', ['provider', 'key', 'limits'], field.at);
  if (f === undefined) return undefined;
  const provider = r.string(f.get('provider'), 'llm.provider');
  if (provider !== 'openai' && provider !== 'anthropic') {
    r.report(
      provider === undefined && !f.has('provider') ? C.missingField : C.invalidValue,
      `llm.provider: '${provider ?? ''}' is not a provider; use openai or anthropic`,
      f.get('provider')?.at ?? field.at,
    );
  }
  const header = parseKey(r, f.get('key'), field);
  const limits = parseLimits(r, f.get('limits'), field);
  if ((provider !== 'openai' && provider !== 'anthropic') || header === undefined || limits === undefined)
    return undefined;
  return { provider, keyHeader: header, limits };
}

function parseKey(r: Reader, field: Field | undefined, section: Field): string | undefined {
  if (field === undefined) {
    r.report(C.missingField, 'llm.key: say where a key comes from, e.g. key: { header: authorization }', section.at);
    return undefined;
  }
  const f = r.fields(field.value, 'llm.key', ['header'], field.at);
  const header = r.string(f?.get('header'), 'llm.key.header')?.toLowerCase();
  if (header === undefined || !HEADER_NAME.test(header)) {
    r.report(
      C.invalidValue,
      'llm.key.header: expected a request header name, e.g. authorization or x-api-key',
      field.at,
    );
    return undefined;
  }
  return header;
}

function parseLimits(r: Reader, field: Field | undefined, section: Field): LlmRules['limits'] | undefined {
  const f = field === undefined ? undefined : r.fields(field.value, 'llm.limits', Object.keys(LIMIT_NAMES), field.at);
  if (f === undefined || f.size === 0) {
    // An unknown name was reported already; only a section with nothing in it is missing its limits.
    if (field === undefined || (f !== undefined && !(isMap(field.value) && field.value.items.length > 0)))
      r.report(
        C.missingField,
        'llm.limits: give at least one of requests, input_tokens, output_tokens, total_tokens ({ limit, period })',
        field?.at ?? section.at,
      );
    return undefined;
  }
  const limits: Record<string, { limit: number; periodMs: number }> = {};
  let ok = true;
  for (const [name, entry] of f) {
    const path = `llm.limits.${name}`;
    const g = r.fields(entry.value, path, ['limit', 'period'], entry.at);
    const limit = r.number(g?.get('limit'), `${path}.limit`);
    const period = r.scalar(g?.get('period'), `${path}.period`);
    if (g === undefined || limit === undefined || period === undefined) {
      if (g !== undefined && (!g.has('limit') || !g.has('period')))
        r.report(C.missingField, `${path}: needs limit and period, e.g. { limit: 20000, period: 1m }`, entry.at);
      ok = false;
      continue;
    }
    if (!Number.isInteger(limit) || limit < 1 || limit > MAX_LIMIT) {
      r.report(C.invalidLimit, `${path}.limit: expected a whole number from 1 to ${MAX_LIMIT}`, entry.at);
      ok = false;
      continue;
    }
    try {
      limits[LIMIT_NAMES[name as keyof typeof LIMIT_NAMES]] = {
        limit,
        periodMs: parseDuration(period, `${path}.period`),
      };
    } catch (error) {
      r.report(C.badDuration, isSluiceError(error) ? error.message : `${path}.period: not a duration`, entry.at);
      ok = false;
    }
  }
  return ok ? (limits as LlmRules['limits']) : undefined;
}
