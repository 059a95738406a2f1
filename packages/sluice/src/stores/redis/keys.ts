/**
 * Redis key names. A counter lives at `prefix + '{' + key + '}' + ':' + policyId`, its block at
 * `…'}' + '!' + policyId` and a key's concurrency leases at `…'}' + '#'`. The user's key is the hash tag,
 * so every key of one user key shares a Cluster slot, and it is escaped (`\` → `\\`, `{` → `\[`,
 * `}` → `\]`) so it can neither end the tag early nor make two different keys collide: the tag runs to
 * the first `}`, the character after it says what the key holds, and the rest is the policy id.
 */
import { SluiceError } from '../../core/errors.js';

const NEEDS_ESCAPE = /[\\{}]/;
const ESCAPES = /[\\{}]/g;
const ESCAPED: Record<string, string> = { '\\': '\\\\', '{': '\\[', '}': '\\]' };

/** Escapes a user key for use inside the hash tag. Injective. */
export function escapeKey(key: string): string {
  return NEEDS_ESCAPE.test(key) ? key.replace(ESCAPES, (c) => ESCAPED[c] as string) : key;
}

/** Checks a key prefix: braces would move the hash tag into the prefix. */
export function validatePrefix(prefix: unknown): string {
  if (typeof prefix !== 'string' || prefix.includes('{') || prefix.includes('}')) {
    throw new SluiceError('ERR_SLUICE_INVALID_OPTION', "prefix: expected a string without '{' or '}'", {
      option: 'prefix',
    });
  }
  return prefix;
}

/** The tag part `prefix{escaped}` that every key of `key` starts with. */
export function tagOf(prefix: string, key: string): string {
  return `${prefix}{${escapeKey(key)}}`;
}

/** Counter key. */
export const stateKey = (tag: string, policyId: string) => `${tag}:${policyId}`;
/** Block key (a policy's blockMs). */
export const blockKey = (tag: string, policyId: string) => `${tag}!${policyId}`;
/** Concurrency lease set of a key. */
export const leaseKey = (tag: string) => `${tag}#`;

const CRC16_TABLE = (() => {
  const table = new Uint16Array(256);
  for (let i = 0; i < 256; i++) {
    let crc = i << 8;
    for (let j = 0; j < 8; j++) crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
    table[i] = crc;
  }
  return table;
})();

function crc16(bytes: Uint8Array | string): number {
  let crc = 0;
  for (let i = 0; i < bytes.length; i++) {
    const b = typeof bytes === 'string' ? bytes.charCodeAt(i) : (bytes[i] as number);
    crc = ((crc << 8) & 0xffff) ^ (CRC16_TABLE[((crc >> 8) ^ b) & 0xff] as number);
  }
  return crc;
}

/** True when every character is one byte in UTF-8. */
function isAscii(s: string): boolean {
  for (let i = 0; i < s.length; i++) if (s.charCodeAt(i) > 0x7f) return false;
  return true;
}

/**
 * The Redis Cluster hash slot of a key (CRC16-XMODEM of the hash tag, mod 16384), with Redis's rules:
 * the tag is what lies between the first `{` and the next `}`, unless that is empty.
 */
export function slotOf(redisKey: string): number {
  let hashed = redisKey;
  const open = redisKey.indexOf('{');
  if (open !== -1) {
    const close = redisKey.indexOf('}', open + 1);
    if (close > open + 1) hashed = redisKey.slice(open + 1, close);
  }
  return crc16(isAscii(hashed) ? hashed : new TextEncoder().encode(hashed)) & 16383;
}
