/**
 * Builds the Redis store's scripts from the .lua files in ./lua (generated into lua-sources.ts, which the
 * library reads instead of files): the static scripts' files are used as they are; the templated ones — the
 * prelude, the batch loop, each algorithm's check step (check-*.lua), the helpers, refund and charge steps —
 * are expanded here and only here (lua-template.ts: macros and constants of lua-macros.ts, lines kept per
 * flag), and the batch script of each algorithm gets its step pasted inline. scripts.ts hashes the results
 * for EVALSHA.
 *
 * The Lua run inside Redis: a line-for-line port of the pure steps in src/algorithms (and of the memory
 * store's block and multi-limit logic), so a Redis store and a memory store make the same decisions.
 * Lua numbers are doubles like JavaScript's and every quantity is an integer below 2^53 (see
 * ResolvedPolicy), so the arithmetic is bit for bit the same.
 *
 * Every script starts with prelude.lua and takes the same first two ARGV:
 *   ARGV[1]  the caller's time in ms, or '' to read Redis `TIME` (the server clock)
 *   ARGV[2]  grace ms added to every TTL (0 with the server clock; see GRACE in redis-store.ts)
 * ARGV[3] is the number of policies. They travel once per call, at the end of ARGV, 8 arguments each
 * (`alg limit periodMs capacity scale intervalTicks capacityTicks blockMs`; the batch scripts take
 * only the fields their algorithm reads, BATCH_POLICY_FIELDS), and items refer to them by index; the
 * batch script parses the first policy once per call, not once per item. They are
 * hexadecimal text (scripts.ts, policyArgs), read with `tonumber(s, 16)` (C's strtoul; decimal would
 * take glibc's strtod, the dearer by far), and not binary: a binary argument would make ioredis encode
 * the whole command its slower way, which costs the client more than Redis saves.
 * Every item has two KEYS: its state key and its block key (both in the same hash slot); in the batch
 * scripts the block key only when the item's policy blocks.
 *
 * A decision comes back as 6 integers: allowed (1/0), remaining, resetMs, retryAfterMs (-1 = never),
 * reason (0 none, 1 cost-exceeds-capacity, 2 blocked, 3 undecided: Redis refused the write it needed),
 * delayMs (-1 = none). When an item is undecided, the reply ends with the refusal's message.
 *
 * Writes that decide go through WCALL (redis.pcall), never redis.call: when Redis refuses writes — maxmemory
 * reached under noeviction, a read-only replica after a failover — an error raised by call() would fail
 * the whole script, and every request batched into it would get the failure policy, even a key that is
 * over its limit. With WCALL, what can be decided by reading still is (a rejection writes nothing), and
 * only the items that needed a write come back undecided. (Redis checks memory only before a script's
 * first write, so once one write went through, the rest of the script's writes do too.)
 */

import { LUA_CONSTANTS, LUA_MACROS } from './lua-macros.js';
import { LUA_SOURCES } from './lua-sources.js';
import { expandLua, type LuaWords } from './lua-template.js';

/** Algorithm codes used in ARGV. */
export const ALGORITHM_CODES = {
  'fixed-window': 1,
  'sliding-window': 2,
  'sliding-log': 3,
  'token-bucket': 4,
  'leaky-bucket': 5,
  gcra: 6,
} as const;

/**
 * The policy fields the batch script of each algorithm reads, in this order (the Lua locals they fill
 * are in BATCH_LOCAL; the others are 0: the algorithm's step never reads them). A batch call sends
 * only these — fewer arguments for the client to encode and for Redis to read and hand to Lua.
 */
export const BATCH_POLICY_FIELDS = {
  windows: ['limit', 'periodMs', 'capacity', 'blockMs'],
  buckets: ['capacity', 'scale', 'intervalTicks', 'capacityTicks', 'blockMs'],
} as const;
/** The batch script's Lua local of each policy field, in the order the script declares them. */
const BATCH_LOCAL = {
  limit: 'limit',
  periodMs: 'period',
  capacity: 'capacity',
  scale: 'scale',
  intervalTicks: 'T',
  capacityTicks: 'capT',
  blockMs: 'blockMs',
} as const;

/** A policy's fields as numbers, for a script with the policy written in (a ResolvedPolicy is one). */
export type BakedPolicy = Readonly<Record<keyof typeof BATCH_LOCAL, number>>;

/** Which field list a batch script of `code` takes (see BATCH_POLICY_FIELDS). */
export function batchPolicyKind(code: number): keyof typeof BATCH_POLICY_FIELDS {
  return code <= 3 ? 'windows' : 'buckets';
}

/**
 * A batch script replies to an allowed decision — nearly every decision — with one integer,
 * remaining × 2^29 + resetMs, when remaining is below 2^24 and resetMs below 2^29 (6.2 days): exact in
 * a double, and never negative. The leaky bucket's allowed decisions carry a delay too; theirs is
 * remaining × 2^29 + resetMs × 2 + q (resetMs below 2^28), where q is 0 or 1: the delay is
 * ceil(level / scale) and resetMs ceil((level + Δ) / scale), Δ being what the request adds (cost ×
 * intervalTicks, or 0 when it takes nothing), so resetMs − delay is floor(Δ / scale) or one more, and
 * q says which (decodeCompact in decode.ts). Any other decision is six integers, the first of them
 * −1 − allowed (so negative), then remaining, reset, retry, reason, delay. A lone packed decision is
 * the whole reply, not a table: Redis turns a table into its reply at about 6,000 instructions more
 * than a number (it probes every table for error and status fields), and every element costs Redis
 * and the client again.
 */
export const PACKED_RESET_LIMIT = 2 ** 29;
const PACKED_REMAINING_LIMIT = 2 ** 24;
/** The leaky bucket's packed decision holds resetMs × 2 where the others hold resetMs. */
const PACKED_SHAPED_RESET_LIMIT = PACKED_RESET_LIMIT / 2;
/** The packing limits, as batch.lua reads them. */
const PACKED = { PACKED_RESET_LIMIT, PACKED_REMAINING_LIMIT, PACKED_SHAPED_RESET_LIMIT };

/** The templated parts (redis/lua/<name>.lua) by name. */
function source(name: string): string {
  const text = (LUA_SOURCES as Readonly<Record<string, string>>)[`redis/${name}`];
  if (text === undefined) throw new Error(`no Lua file redis/lua/${name}.lua`);
  return text;
}

/** What every template may use (lua-macros.ts), with the flags and extra words of the script being built. */
function words(extra: { flags?: string[]; constants?: LuaWords['constants']; macros?: LuaWords['macros'] }): LuaWords {
  const all: LuaWords = {
    macros: { ...LUA_MACROS, PASTE: (name) => part(name.slice(1, -1), all), ...extra.macros },
    constants: { ...LUA_CONSTANTS, ...PACKED, ...extra.constants },
    flags: extra.flags ?? [],
  };
  return all;
}

/**
 * A templated .lua file expanded, without its opening comment (it speaks to the file's reader; Redis need
 * not parse it in every script) and without its last newline (PASTE puts it mid-line).
 */
function part(name: string, w: LuaWords): string {
  return expandLua(source(name).replace(/^(--.*\n)+/, ''), w)
    .trimStart()
    .replace(/\n$/, '');
}

/** The check-*.lua file of each algorithm code; the leaky bucket's is GCRA's with SHAPING (its delay). */
const CHECK_FILES: Readonly<Record<number, string>> = {
  1: 'check-fixed-window',
  2: 'check-sliding-window',
  3: 'check-sliding-log',
  4: 'check-gcra',
  5: 'check-gcra',
  6: 'check-gcra',
};
const shaping = (code: number) => (code === ALGORITHM_CODES['leaky-bucket'] ? ['SHAPING'] : []);

/**
 * Each algorithm's check step as Lua text: pasted inline into its batch script's loop (CHECK_STEP), wrapped
 * in a function for the multi-limit script, and pasted by the escrow store (multi-region/escrow-lua.ts).
 */
export const CHECK_SNIPPETS: Readonly<Record<number, string>> = Object.fromEntries(
  Object.entries(CHECK_FILES).map(([code, file]) => [code, part(file, words({ flags: shaping(Number(code)) }))]),
);
/** CHECK_STEP: the algorithm's step, pasted. */
const step = (code: number) => () => CHECK_SNIPPETS[code] as string;

const PRELUDE = `${part('prelude', words({}))}\n`;
const LAZY_PRELUDE = part('prelude', words({ flags: ['LAZY_CLOCK'] }));
const HELPERS = `${part('helpers', words({}))}\n`;
/** Each algorithm's step as CHECK[code], for the multi-limit script. */
const CHECK_FUNCTIONS = Object.keys(CHECK_FILES)
  .map((code) =>
    part(
      'check-function',
      words({
        constants: { ALGORITHM: code },
        macros: { CHECK_STEP: step(Number(code)) },
      }),
    ),
  )
  .join('\n');
const REFUND_FUNCTIONS = `${part('refund-steps', words({}))}\n`;
const CHARGE_FUNCTIONS = `${part('charge-steps', words({}))}\n`;

/** Lua reading the policy whose BATCH_POLICY_FIELDS start after ARGV[b] into the batch locals (unread ones 0). */
const policyAt = (fields: readonly string[]) => (b: string) =>
  Object.keys(BATCH_LOCAL)
    .map((field) => {
      const i = fields.indexOf(field);
      return i === -1 ? '0' : `tonumber(ARGV[${b} + ${i + 1}], 16)`;
    })
    .join(', ');

/** Where a policy's own script has its numbers (BAKED_POLICY): written in after the expansion. */
const BAKED_MARK = '\u0000BAKED_POLICY\u0000';

/** Each algorithm's batch script, with and without a policy baked in (the mark in its place), expanded once. */
const batchSources = new Map<string, string>();

/** batch.lua expanded for algorithm `code`, after prelude.lua with a lazy clock (cached). */
function batchSource(code: number, baked: boolean): string {
  // GCRA and the token bucket share their step, so their scripts are one text (built once).
  const id = `${CHECK_FILES[code]}:${shaping(code)}:${baked}`;
  let source = batchSources.get(id);
  if (source === undefined) {
    const fields: readonly string[] = BATCH_POLICY_FIELDS[batchPolicyKind(code)];
    const w = words({
      flags: [...shaping(code), ...(baked ? ['BAKED'] : [])],
      constants: { POLICY_WIDTH: fields.length, FIRST_ARGV_POLICY: baked ? 2 : 1, BAKED_POLICY: BAKED_MARK },
      macros: { POLICY_AT: policyAt(fields), CHECK_STEP: step(code) },
    });
    source = `${LAZY_PRELUDE}\n${part('batch', w)}\n`;
    batchSources.set(id, source);
  }
  return source;
}

/**
 * The source of the batch-check script of one algorithm (code 1–6): prelude.lua with a lazy clock, then
 * batch.lua with the algorithm's step pasted in. With `baked` (a policy's own script: policy-scripts.ts), the
 * script of that one policy: policy 1 is written into the source and does not travel, and ARGV[3] counts
 * only the policies after it.
 */
export function checkScriptSource(code: number, baked?: BakedPolicy): string {
  if (baked === undefined) return batchSource(code, false);
  const fields: readonly string[] = BATCH_POLICY_FIELDS[batchPolicyKind(code)];
  const numbers = (Object.keys(BATCH_LOCAL) as (keyof BakedPolicy)[])
    .map((field) => (fields.includes(field) ? String(baked[field]) : '0'))
    .join(', ');
  return batchSource(code, true).replace(BAKED_MARK, numbers);
}

/** Script sources by name: the prelude, the helpers and the steps a script needs, then its own .lua file. */
export const SCRIPT_SOURCES = {
  many: `${PRELUDE}${HELPERS}${CHECK_FUNCTIONS}\n${REFUND_FUNCTIONS}${CHARGE_FUNCTIONS}${LUA_SOURCES['redis/many']}`,
  refund: PRELUDE + HELPERS + REFUND_FUNCTIONS + LUA_SOURCES['redis/refunds'],
  acquire: PRELUDE + HELPERS + LUA_SOURCES['redis/acquire'],
  release: PRELUDE + HELPERS + LUA_SOURCES['redis/release'],
} as const;
