import { createHash, timingSafeEqual } from 'node:crypto';

/** How a request's credentials compare with the admin token. */
export type AdminAuth = 'ok' | 'disabled' | 'missing' | 'wrong';

/** The smallest token accepted: a short one could be guessed. */
export const MIN_ADMIN_TOKEN_LENGTH = 16;

/**
 * Checks `Authorization: Bearer <token>` against the admin token in constant time: both sides are
 * hashed first, so the comparison never depends on where they differ nor leaks the token's length.
 */
export function createAdminAuth(token: string | undefined): (authorization: string | undefined) => AdminAuth {
  if (token === undefined || token === '') return () => 'disabled';
  const expected = createHash('sha256').update(token).digest();
  return (authorization) => {
    const match = authorization === undefined ? null : /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(authorization);
    if (match === null) return 'missing';
    const given = createHash('sha256')
      .update(match[1] as string)
      .digest();
    return timingSafeEqual(given, expected) ? 'ok' : 'wrong';
  };
}
