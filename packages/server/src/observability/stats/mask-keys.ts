/** Masks counted keys for the dashboard without the admin token (a keyed hash per policy). */
import { createHmac, randomBytes } from 'node:crypto';
import { SluiceError } from 'sluice';
import type { TopKey } from './top-keys.js';

/** Masks one counted key of one policy (`domain` and `rule`: the rule's id, or a `/v1/check` policy id). */
export type KeyMasker = (key: string, policy: { readonly domain: string; readonly rule: string }) => string;

/** Options of {@link createKeyMasker}. */
export interface KeyMaskerOptions {
  /**
   * The HMAC key (at least 16 bytes). Give the same one to several instances to show the same masks on each.
   * @default 32 random bytes, new in each process
   */
  secret?: string | Uint8Array;
}

/** Most masked keys remembered; past it the cache starts afresh (a mask is cheap to compute again). */
const CACHE_SIZE = 4096;

/**
 * Hides the values of counted keys (API keys, e-mail addresses, client addresses) from callers without the
 * admin token: `api_key=7f3a…` becomes `api_key=#5d0c9e1a7b`. The descriptor keys stay readable and a value
 * keeps its mask for the life of the process (so a person can still follow one key on the dashboard). The
 * mask is an HMAC with the server's secret over the policy and the value: it cannot be computed offline,
 * and one value has a different mask under each policy. With one mask for a value under any policy, a
 * caller could count a guessed value under a policy of its own (`/v1/check` needs no token) and compare
 * masks to learn that someone else's key was that value.
 */
export function createKeyMasker(options: KeyMaskerOptions = {}): KeyMasker {
  const secret = options.secret ?? randomBytes(32);
  if (Buffer.byteLength(secret) < 16) {
    throw new SluiceError('ERR_SLUICE_INVALID_OPTION', 'maskSecret: use a secret of at least 16 bytes', {
      option: 'maskSecret',
    });
  }
  const cache = new Map<string, string>();
  // Lengths first, so no two (domain, rule, name, value) tuples hash the same text.
  const mask = (domain: string, rule: string, name: string, value: string) =>
    `#${createHmac('sha256', secret)
      .update(`${domain.length}:${rule.length}:${name.length}:${domain}${rule}${name}${value}`)
      .digest('hex')
      .slice(0, 10)}`;
  return (key, { domain, rule }) => {
    const id = `${domain}\u0000${rule}\u0000${key}`;
    let masked = cache.get(id);
    if (masked !== undefined) return masked;
    masked = key
      .split('/')
      .map((entry) => {
        const eq = entry.indexOf('=');
        if (eq === -1) return mask(domain, rule, '', entry);
        const name = entry.slice(0, eq);
        return `${name}=${mask(domain, rule, name, entry.slice(eq + 1))}`;
      })
      .join('/');
    if (cache.size >= CACHE_SIZE) cache.clear();
    cache.set(id, masked);
    return masked;
  };
}

/** The same keys with their values masked, each under its own policy. */
export function maskTopKeys(keys: readonly TopKey[], mask: KeyMasker): TopKey[] {
  return keys.map((k) => ({ ...k, key: mask(k.key, k) }));
}
