/**
 * Redis key names. A counter lives at `prefix + '{' + key + '}' + ':' + keyId`, its block at
 * `…'}' + '!' + keyId` and a key's concurrency leases at `…'}' + '#'`, where keyId is the policy id in
 * a short form ({@link keyIdOf}). The user's key is the hash tag,
 * so every key of one user key shares a Cluster slot, and it is escaped (`\` → `\\`, `{` → `\[`,
 * `}` → `\]`) so it can neither end the tag early nor make two different keys collide: the tag runs to
 * the first `}`, the character after it says what the key holds, and the rest is the policy id.
 */
import { SluiceError } from '../../core/errors.js';
import type { ResolvedPolicy } from '../../core/policy.js';

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

/**
 * One letter per algorithm code of policy ids (core/policy.ts). A letter also says how a key's value
 * is laid out: earlier versions kept the buckets (`t`, `k`) as "level:last" and the sliding log (`l`)
 * in doubles, which this version's scripts do not read (lua/check-*.lua), so the new layouts live under
 * new names and an older process never misreads one.
 */
const ALGORITHM_LETTERS: Readonly<Record<string, string>> = { fw: 'f', sw: 'w', sl: 'e', tb: 'b', lb: 'q', gc: 'g' };
/** Policy ids as resolvePolicy makes them: algorithm, limit, `/`, period ms, optional `b` burst. */
const POLICY_ID = /^([a-z]{2})(\d+)\/(\d+)(?:b(\d+))?$/;
const PERIOD_UNITS: readonly (readonly [number, string])[] = [
  [86_400_000, 'd'],
  [3_600_000, 'h'],
  [60_000, 'm'],
  [1_000, 's'],
];

/**
 * A policy id in the short form key names carry: `fw100/86400000` → `f2s.1d` (algorithm letter, limit
 * in base 36, `.`, the period in its largest whole unit of d/h/m/s or else in ms, then `b` and the burst
 * in base 36 when it differs). Key names are most of what a counter costs Redis: with the default prefix
 * the short form puts `sluice:{user:12345}:…` in jemalloc's 32-byte class instead of the 40-byte one,
 * 8 bytes less per key (docs/redis.md has the byte count). It is injective: the parts decode one way,
 * and an id of any other shape is kept whole — it contains `/`, which no short form does.
 */
export function shortPolicyId(id: string): string {
  const m = POLICY_ID.exec(id);
  const letter = m === null ? undefined : ALGORITHM_LETTERS[m[1] as string];
  if (m === null || letter === undefined) return id;
  const periodMs = Number(m[3]);
  let period = m[3] as string;
  for (const [ms, unit] of PERIOD_UNITS) {
    if (periodMs > 0 && periodMs % ms === 0) {
      period = `${periodMs / ms}${unit}`;
      break;
    }
  }
  const burst = m[4] === undefined ? '' : `b${Number(m[4]).toString(36)}`;
  return `${letter}${Number(m[2]).toString(36)}.${period}${burst}`;
}

const keyIds = new WeakMap<ResolvedPolicy, string>();

/** The key id of a policy (its {@link shortPolicyId}, computed once per policy object). */
export function keyIdOf(policy: ResolvedPolicy): string {
  let id = keyIds.get(policy);
  if (id === undefined) {
    id = shortPolicyId(policy.id);
    keyIds.set(policy, id);
  }
  return id;
}

/** Counter key. */
export const stateKey = (tag: string, keyId: string) => `${tag}:${keyId}`;
/** Block key (a policy's blockMs). */
export const blockKey = (tag: string, keyId: string) => `${tag}!${keyId}`;
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
