/** Which response header a wait came from. */
export type RetryHintSource = 'retry-after' | 'ratelimit' | 'ratelimit-reset' | 'x-ratelimit-reset';

/** How long the server asked us to wait, and which header said so. */
export interface RetryHint {
  /** Milliseconds from now; never negative. */
  readonly waitMs: number;
  readonly source: RetryHintSource;
}

/** Read-only view of response headers: a `Headers` object, or anything with the same `get`. */
export interface HeaderReader {
  get(name: string): string | null;
}

/**
 * Reads how long to wait before retrying from a 429/503 response, in order of authority:
 * 1. `Retry-After` (RFC 9110 §10.2.3): delay-seconds or an HTTP date;
 * 2. `RateLimit` (draft-ietf-httpapi-ratelimit-headers): the `t` parameter of the most exhausted policy
 *    in the structured form (`"name";r=0;t=5`), or `reset=` in the older dictionary form;
 * 3. `RateLimit-Reset` (drafts up to 07): delta-seconds;
 * 4. `X-RateLimit-Reset`: delta-seconds, or a Unix time in seconds or milliseconds (as GitHub sends);
 *    told apart by size, since no API resets 30 years from now.
 *
 * @returns undefined when no header gives a usable wait (the caller then backs off).
 * @example retryHint(new Headers({ 'retry-after': '3' }), Date.now()) // { waitMs: 3000, source: 'retry-after' }
 */
export function retryHint(headers: HeaderReader, nowMs: number): RetryHint | undefined {
  const retryAfter = parseRetryAfter(headers.get('retry-after'), nowMs);
  if (retryAfter !== undefined) return { waitMs: retryAfter, source: 'retry-after' };
  const rateLimit = parseRateLimitField(headers.get('ratelimit'));
  if (rateLimit !== undefined) return { waitMs: rateLimit, source: 'ratelimit' };
  const reset = parseSeconds(headers.get('ratelimit-reset'));
  if (reset !== undefined) return { waitMs: reset, source: 'ratelimit-reset' };
  const xReset = parseXRateLimitReset(headers.get('x-ratelimit-reset'), nowMs);
  if (xReset !== undefined) return { waitMs: xReset, source: 'x-ratelimit-reset' };
  return undefined;
}

const SECONDS = /^\d+(?:\.\d+)?$/;

/** `Retry-After`: delay-seconds, or an HTTP date (any form Date.parse reads: IMF-fixdate, RFC 850, asctime). */
export function parseRetryAfter(value: string | null, nowMs: number): number | undefined {
  if (value === null) return undefined;
  const v = value.trim();
  if (SECONDS.test(v)) return toMs(Number(v));
  // A date must name a weekday or month; a bare number that failed above is junk, not a year.
  if (!/[A-Za-z]/.test(v)) return undefined;
  // HTTP dates are always GMT; asctime's form does not say so, and Date.parse would read it as local time.
  const at = Date.parse(/\b(GMT|UTC)\b|[+-]\d{4}$/.test(v) ? v : `${v} GMT`);
  return Number.isNaN(at) ? undefined : Math.max(0, at - nowMs);
}

/** Delta-seconds, as `RateLimit-Reset` sends them. */
function parseSeconds(value: string | null): number | undefined {
  if (value === null) return undefined;
  const v = value.trim();
  return SECONDS.test(v) ? toMs(Number(v)) : undefined;
}

/** `X-RateLimit-Reset`: delta-seconds, or Unix seconds (≥ 1e9), or Unix milliseconds (≥ 1e12). */
export function parseXRateLimitReset(value: string | null, nowMs: number): number | undefined {
  if (value === null) return undefined;
  const v = value.trim();
  if (!SECONDS.test(v)) return undefined;
  const n = Number(v);
  if (n >= 1e12) return Math.max(0, Math.ceil(n - nowMs));
  if (n >= 1e9) return Math.max(0, Math.ceil(n * 1000 - nowMs));
  return toMs(n);
}

/**
 * The wait a `RateLimit` field asks for. Structured form (drafts 08+): a list of policies, each
 * `"name";r=<remaining>;t=<seconds>`; the policy with the least remaining is the one that refused us,
 * and among equals the longest `t` is the one that must pass. Older dictionary form:
 * `limit=10, remaining=0, reset=5`.
 */
export function parseRateLimitField(value: string | null): number | undefined {
  if (value === null || value.trim() === '') return undefined;
  let best: { r: number; t: number } | undefined;
  let dictionaryReset: number | undefined;
  for (const member of splitOutsideQuotes(value, ',')) {
    const [item = '', ...params] = splitOutsideQuotes(member, ';').map((s) => s.trim());
    const eq = item.indexOf('=');
    if (eq > 0 && !item.startsWith('"')) {
      // Dictionary member of the older drafts: key=value.
      if (item.slice(0, eq).trim().toLowerCase() === 'reset') dictionaryReset = parseSeconds(item.slice(eq + 1));
      continue;
    }
    const p = paramsOf(params);
    const t = p.get('t');
    if (t === undefined) continue;
    const r = p.get('r') ?? 0;
    if (best === undefined || r < best.r || (r === best.r && t > best.t)) best = { r, t };
  }
  if (best !== undefined) return toMs(best.t);
  return dictionaryReset;
}

function paramsOf(params: readonly string[]): Map<string, number> {
  const out = new Map<string, number>();
  for (const param of params) {
    const eq = param.indexOf('=');
    if (eq <= 0) continue;
    const value = param.slice(eq + 1).trim();
    if (SECONDS.test(value)) out.set(param.slice(0, eq).trim().toLowerCase(), Number(value));
  }
  return out;
}

/** Splits on `separator` except inside double-quoted strings (structured-field strings may hold commas). */
function splitOutsideQuotes(text: string, separator: string): string[] {
  const parts: string[] = [];
  let current = '';
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i] as string;
    if (quoted && c === '\\') {
      current += c + (text[i + 1] ?? '');
      i++;
      continue;
    }
    if (c === '"') quoted = !quoted;
    if (c === separator && !quoted) {
      parts.push(current);
      current = '';
    } else {
      current += c;
    }
  }
  parts.push(current);
  return parts;
}

function toMs(seconds: number): number {
  return Math.ceil(seconds * 1000);
}
