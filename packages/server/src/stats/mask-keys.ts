import { createHmac, randomBytes } from 'node:crypto';
import type { TopKey } from './top-keys.js';

/**
 * Hides the values of counted keys (API keys, e-mail addresses, client addresses) from callers without the
 * admin token: `api_key=7f3a…` becomes `api_key=#5d0c9e1a7b`. The descriptor keys stay readable and a value
 * keeps the same mask for the life of the process (so a person can still follow one key on the dashboard),
 * but the mask is a keyed hash with a random per-process secret: it cannot be looked up or guessed offline.
 */
export function createKeyMasker(): (key: string) => string {
  const secret = randomBytes(32);
  const cache = new Map<string, string>();
  const mask = (value: string) => `#${createHmac('sha256', secret).update(value).digest('hex').slice(0, 10)}`;
  return (key) => {
    let masked = cache.get(key);
    if (masked !== undefined) return masked;
    masked = key
      .split('/')
      .map((entry) => {
        const eq = entry.indexOf('=');
        return eq === -1 ? mask(entry) : `${entry.slice(0, eq)}=${mask(entry.slice(eq + 1))}`;
      })
      .join('/');
    if (cache.size >= 4096) cache.clear();
    cache.set(key, masked);
    return masked;
  };
}

/** The same keys with their values masked. */
export function maskTopKeys(keys: readonly TopKey[], mask: (key: string) => string): TopKey[] {
  return keys.map((k) => ({ ...k, key: mask(k.key) }));
}
