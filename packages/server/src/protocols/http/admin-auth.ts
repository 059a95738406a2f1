/** The admin token check: constant-time comparison, and a backoff per address after wrong tokens. */
import { createHash, timingSafeEqual } from 'node:crypto';
import { SluiceError } from 'sluice';

/** How a request's credentials compare with the admin token. `locked`: too many wrong tokens from its address. */
export type AdminAuth = 'ok' | 'disabled' | 'missing' | 'wrong' | 'locked';

/** The smallest token accepted: a short one could be guessed. */
export const MIN_ADMIN_TOKEN_LENGTH = 16;

/** Wrong tokens an address may send before it must wait. */
export const FREE_FAILURES = 5;
/** Longest wait imposed on an address after wrong tokens. */
export const MAX_LOCK_MS = 15 * 60_000;
/** Addresses remembered for their failures; the oldest is forgotten past this. */
const MAX_TRACKED = 10_000;

/** Checks a request's `Authorization` header, from `address`, at `nowMs`; how long to wait when locked. */
export interface AdminAuthenticator {
  (authorization: string | undefined, address?: string, nowMs?: number): AdminAuth;
  /** Milliseconds until `address` may try again (0 when it may now). */
  retryAfterMs(address: string, nowMs: number): number;
}

/**
 * Checks `Authorization: Bearer <token>` against the admin token in constant time: both sides are
 * hashed first, so the comparison never depends on where they differ nor leaks the token's length.
 *
 * Guessing is slowed per client address: after {@link FREE_FAILURES} wrong tokens, each further one
 * doubles the time the address must wait (1 s, 2 s, 4 s, … up to {@link MAX_LOCK_MS}); while it waits,
 * its requests are refused without looking at the token. A right token clears the address's record.
 * @throws SluiceError `ERR_SLUICE_INVALID_OPTION` for a token shorter than {@link MIN_ADMIN_TOKEN_LENGTH}.
 */
export function createAdminAuth(token: string | undefined): AdminAuthenticator {
  const failures = new Map<string, { count: number; untilMs: number }>();
  const retryAfterMs = (address: string, nowMs: number) => Math.max(0, (failures.get(address)?.untilMs ?? 0) - nowMs);
  if (token === undefined || token === '') return Object.assign(() => 'disabled' as const, { retryAfterMs });
  if (token.length < MIN_ADMIN_TOKEN_LENGTH) {
    throw new SluiceError(
      'ERR_SLUICE_INVALID_OPTION',
      `SLUICE_ADMIN_TOKEN: at least ${MIN_ADMIN_TOKEN_LENGTH} characters, got ${token.length}; use a long random one (e.g. openssl rand -hex 32)`,
      { option: 'adminToken' },
    );
  }
  const expected = createHash('sha256').update(token).digest();
  const check = (authorization: string | undefined, address = '', nowMs = Date.now()): AdminAuth => {
    if (retryAfterMs(address, nowMs) > 0) return 'locked';
    const match = authorization === undefined ? null : /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(authorization);
    if (match === null) return 'missing';
    const given = createHash('sha256')
      .update(match[1] as string)
      .digest();
    if (timingSafeEqual(given, expected)) {
      failures.delete(address);
      return 'ok';
    }
    const record = failures.get(address) ?? { count: 0, untilMs: 0 };
    record.count++;
    const over = record.count - FREE_FAILURES;
    record.untilMs = over > 0 ? nowMs + Math.min(MAX_LOCK_MS, 1000 * 2 ** Math.min(over - 1, 20)) : 0;
    failures.delete(address);
    if (failures.size >= MAX_TRACKED) failures.delete(failures.keys().next().value as string);
    failures.set(address, record);
    return 'wrong';
  };
  return Object.assign(check, { retryAfterMs });
}
