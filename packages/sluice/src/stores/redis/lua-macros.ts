/**
 * The words the Redis store's templated `.lua` files use beyond Lua (lua-template.ts expands them): macros that
 * paste a write, a number's formatting or a clock reading inline, and the constants the Lua shares with TypeScript.
 */
import { MAX_DEBT } from '../../algorithms/debt.js';
import type { LuaMacro } from './lua-template.js';

/**
 * Lua text formatting a number exactly: integers (counts, windows, milliseconds, ticks: nearly every
 * number written) by '%d', which prints them as '%.17g' does at a fraction of its cost in Redis's Lua
 * (≈ 60 against 350 ns, and a decision writes two to four), anything else by '%.17g'. `expr` is
 * evaluated up to three times: callers pass plain arithmetic.
 */
export const fmt = (expr: string) => `(${isInteger(expr)} and sformat('%d', ${expr}) or sformat('%.17g', ${expr}))`;

/** Lua text: whether `expr` is an integer that '%d' prints exactly (below 2^53 in magnitude). */
const isInteger = (expr: string) =>
  `(${expr}) % 1 == 0 and (${expr}) < 9007199254740992 and (${expr}) > -9007199254740992`;

/**
 * Lua text running a write through WCALL (redis.pcall here; the escrow store's scripts make it
 * redis.call, so a refused write fails their whole script) and keeping a refusal's message in WERR.
 * Inline rather than a function: a script's functions are closures built again on every call, and
 * that cost a lone decision 4,400 instructions in Redis. `onRefusal` runs after a refusal.
 */
const write = (args: string, onRefusal = '') =>
  `do local r = WCALL(${args}) if type(r) == 'table' and r.err then WERR = WERR or r.err ${onRefusal} end end`;

/** Lua text running a write that must succeed for the decision to stand (else: reason 3, end the step). */
const must = (args: string) => write(args, 'reason = 3 break');

/**
 * Lua text formatting several numbers joined by ':' — the same text as `fmt` of each joined, in one
 * `string.format` when all are integers (each call is a Lua string built and interned: two or three
 * cost twice one).
 */
const joined = (...exprs: string[]) =>
  `(${exprs.map(isInteger).join(' and ')} and sformat('${exprs.map(() => '%d').join(':')}', ${exprs.join(', ')}) or ${exprs.map(fmt).join(" .. ':' .. ")})`;

/**
 * Lua text writing `value` to live until `at` (ms on NOW's clock): under the server clock exactly
 * then, so that its PTTL tells the time later (TIME_FROM_EXPIRY) — a relative expiry would start from
 * Redis's clock a few microseconds later, and each write could add a millisecond; under the callers'
 * clock for `at - NOW` ms plus the grace. A state already as good as a fresh one (at <= NOW) is
 * deleted. `SET … PXAT` needs Redis 6.2 and the scripts run on Redis 5, so PXAT (see prelude.lua)
 * says whether to use it; the fallback, SET then PEXPIREAT, is one more command and, oddly, 16 more
 * bytes per key for a string value on Redis 7.0.
 */
const putAt = (key: string, value: string, at: string) =>
  `do local at = ${at} if at + GRACE > NOW then local value = ${value} if not SERVER then ${must(`'SET', ${key}, value, 'PX', ${fmt('at - NOW + GRACE')}`)} elseif PXAT then ${must(`'SET', ${key}, value, 'PXAT', ${fmt('at')}`)} else ${must(`'SET', ${key}, value`)} ${must(`'PEXPIREAT', ${key}, ${fmt('at')}`)} end else ${write(`'DEL', ${key}`)} end end`;

/** Lua text reading Redis's clock into NOW unless it is already set (the server clock; see prelude.lua). */
const READ_CLOCK = `if not NOW then local t = call('TIME') NOW = tonumber(t[1]) * 1000 + floor(tonumber(t[2]) / 1000) end`;

/**
 * Lua text setting NOW from a stored key that expires at `expiry` (PUT_AT set it so), when NOW is not
 * set yet: NOW = expiry − PTTL. A key without a TTL (not written by sluice) leaves it unset.
 */
const timeFromExpiry = (key: string, expiry: string) =>
  `if not NOW then local left = call('PTTL', ${key}) if left >= 0 then NOW = ${expiry} - left end end`;

/**
 * The sliding log's binary layout in Redis (struct formats): a header of the live entries' total units
 * and the byte position of the first live entry, then one entry per distinct admission time — its
 * time in ms (signed 48 bits: ±4,000 years) and its units (16 bits: an entry holds at most the
 * policy's limit, and MAX_SLIDING_LOG_LIMIT is below 2^16). 8 bytes an entry, half of two doubles.
 */
const LOG_HEADER = '<I4I4';
/** An entry's two fields alone (a same-millisecond admission patches the units in place). */
const LOG_TIME = '<i6';
const LOG_UNITS = '<I2';
const LOG_ENTRY = `${LOG_TIME}${LOG_UNITS.slice(1)}`;
/** Sizes in bytes of the header, of an entry's time and of a whole entry. */
export const LOG_HEADER_SIZE = 8;
const LOG_TIME_SIZE = 6;
export const LOG_ENTRY_SIZE = 8;
/** Up to this many entries a log is rewritten whole (one command); a longer one is patched in place. */
const LOG_REWRITE_ENTRIES = 32;

/** Lua text: the time of the entry at byte position `pos` (1-based) of `blob`. */
const entryTime = (blob: string, pos: string) => `struct.unpack('${LOG_TIME}', ${blob}, ${pos})`;

/** The macros of the templated .lua files (lua-template.ts). */
export const LUA_MACROS: Readonly<Record<string, LuaMacro>> = {
  FMT: fmt,
  WRITE: (...args) => write(args.join(', ')),
  MUST: (...args) => must(args.join(', ')),
  JOINED: joined,
  PUT_AT: putAt,
  READ_CLOCK: () => READ_CLOCK,
  TIME_FROM_EXPIRY: timeFromExpiry,
  ENTRY_TIME: entryTime,
  /** The time of the newest (last) entry of a log that holds at least one. */
  NEWEST_ENTRY_TIME: (blob) => entryTime(blob, `#${blob} - ${LOG_ENTRY_SIZE - 1}`),
};

/** The constants of the templated .lua files: struct formats as Lua strings, sizes and offsets as numbers. */
export const LUA_CONSTANTS: Readonly<Record<string, string | number>> = {
  LOG_HEADER: `'${LOG_HEADER}'`,
  LOG_ENTRY: `'${LOG_ENTRY}'`,
  LOG_UNITS: `'${LOG_UNITS}'`,
  LOG_HEADER_SIZE,
  LOG_ENTRY_SIZE,
  /** The byte position (1-based) of a log's first entry, just past the header. */
  LOG_FIRST_ENTRY: LOG_HEADER_SIZE + 1,
  /** From an entry's first byte to its last. */
  LOG_ENTRY_SPAN: LOG_ENTRY_SIZE - 1,
  /** From an entry's position (1-based) to its units field as SETRANGE counts (from 0). */
  LOG_UNITS_OFFSET: LOG_TIME_SIZE - 1,
  /** The largest log, in bytes, that is rewritten whole (LOG_REWRITE_ENTRIES entries). */
  LOG_REWRITE_BYTES: LOG_HEADER_SIZE + LOG_REWRITE_ENTRIES * LOG_ENTRY_SIZE,
  MAX_DEBT,
};
