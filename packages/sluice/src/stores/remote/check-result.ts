/**
 * Strict validation of one result of a `/v1/check` answer (docs/service.md has the format). Whatever
 * answers at the store's URL — the service, a proxy, a misconfigured or hostile server — becomes a
 * decision only when every field is what the protocol says: numbers finite and in range, booleans
 * booleans, strings bounded. Anything else is a store failure, so the limiter's `fail` policy answers
 * instead of, say, `limit: 'lots'` or `remaining: NaN` reaching the caller. Unknown fields are ignored
 * (a newer service may add some).
 */

/** Largest number a count or a duration may be: past it, doubles stop being exact. */
const MAX_NUMBER = Number.MAX_SAFE_INTEGER;
/** Longest lease id, reason, error code and error message taken from an answer. */
const MAX_ID_LENGTH = 128;
const MAX_REASON_LENGTH = 64;
const MAX_MESSAGE_LENGTH = 2048;
const CODE = /^ERR_SLUICE_[A-Z0-9_]{1,64}$/;

/**
 * Undefined when `value` is a valid result; otherwise where and why it is not, as `.field: expected …`
 * (or `: expected …` for the result as a whole), to follow `results[i]` in a message.
 */
export function checkResult(value: unknown): string | undefined {
  if (!isRecord(value)) return `: expected an object, got ${describe(value)}`;
  if (value.error !== undefined) return checkError(value.error);
  if (value.allowed !== undefined) return checkDecision(value);
  if (value.ok !== undefined) return value.ok === true ? undefined : `.ok: expected true, got ${describe(value.ok)}`;
  if (value.released !== undefined) {
    return typeof value.released === 'boolean' ? undefined : `.released: ${expected('a boolean', value.released)}`;
  }
  return ': expected a decision (allowed), ok, released or error';
}

function checkDecision(r: Record<string, unknown>): string | undefined {
  if (typeof r.allowed !== 'boolean') return `.allowed: ${expected('a boolean', r.allowed)}`;
  for (const field of ['limit', 'remaining', 'resetMs'] as const) {
    if (!isCount(r[field])) return `.${field}: ${expected(`a number from 0 to ${MAX_NUMBER}`, r[field])}`;
  }
  // null: the request can never pass (the decision's Infinity, which JSON cannot carry).
  if (r.retryAfterMs !== null && !isCount(r.retryAfterMs)) {
    return `.retryAfterMs: ${expected(`null or a number from 0 to ${MAX_NUMBER}`, r.retryAfterMs)}`;
  }
  if (r.delayMs !== undefined && !isCount(r.delayMs)) {
    return `.delayMs: ${expected(`a number from 0 to ${MAX_NUMBER}`, r.delayMs)}`;
  }
  if (r.reason !== undefined && !isText(r.reason, MAX_REASON_LENGTH)) {
    return `.reason: ${expected(`a string of at most ${MAX_REASON_LENGTH} characters`, r.reason)}`;
  }
  if (r.degraded !== undefined && typeof r.degraded !== 'boolean') {
    return `.degraded: ${expected('a boolean', r.degraded)}`;
  }
  if (r.lease !== undefined) {
    if (!isRecord(r.lease)) return `.lease: ${expected('an object', r.lease)}`;
    if (!isText(r.lease.id, MAX_ID_LENGTH) || r.lease.id === '') {
      return `.lease.id: ${expected(`a string of 1 to ${MAX_ID_LENGTH} characters`, r.lease.id)}`;
    }
    if (!isCount(r.lease.expiresAt)) {
      return `.lease.expiresAt: ${expected(`a number from 0 to ${MAX_NUMBER}`, r.lease.expiresAt)}`;
    }
  }
  return undefined;
}

function checkError(error: unknown): string | undefined {
  if (!isRecord(error)) return `.error: ${expected('an object', error)}`;
  // The code becomes a SluiceError's code: only sluice's own codes.
  if (error.code !== undefined && (typeof error.code !== 'string' || !CODE.test(error.code))) {
    return `.error.code: ${expected('an ERR_SLUICE_* code', error.code)}`;
  }
  if (error.message !== undefined && !isText(error.message, MAX_MESSAGE_LENGTH)) {
    return `.error.message: ${expected(`a string of at most ${MAX_MESSAGE_LENGTH} characters`, error.message)}`;
  }
  return undefined;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** A finite number from 0 to MAX_NUMBER (JSON cannot carry NaN, but `1e999` parses to Infinity). */
function isCount(value: unknown): value is number {
  return typeof value === 'number' && value >= 0 && value <= MAX_NUMBER;
}

function isText(value: unknown, maxLength: number): value is string {
  return typeof value === 'string' && value.length <= maxLength;
}

function expected(what: string, got: unknown): string {
  return `expected ${what}, got ${describe(got)}`;
}

/** A short, safe description of a value from the answer (never the whole of a long string). */
function describe(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value.length > 32 ? `${value.slice(0, 32)}…` : value);
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'object') return 'an object';
  return String(value);
}
