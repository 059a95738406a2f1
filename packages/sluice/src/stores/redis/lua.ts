/**
 * The Lua run inside Redis: a line-for-line port of the pure steps in src/algorithms (and of the memory
 * store's block and multi-limit logic), so a Redis store and a memory store make the same decisions.
 * Lua numbers are doubles like JavaScript's and every quantity is an integer below 2^53 (see
 * ResolvedPolicy), so the arithmetic is bit for bit the same.
 *
 * Every script starts with the PRELUDE and takes the same first two ARGV:
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
 * Writes that decide go through W (redis.pcall), never redis.call: when Redis refuses writes — maxmemory
 * reached under noeviction, a read-only replica after a failover — an error raised by call() would fail
 * the whole script, and every request batched into it would get the failure policy, even a key that is
 * over its limit. With W, what can be decided by reading still is (a rejection writes nothing), and
 * only the items that needed a write come back undecided. (Redis checks memory only before a script's
 * first write, so once one write went through, the rest of the script's writes do too.)
 */

/** Algorithm codes used in ARGV. */
export const ALGORITHM_CODES = {
  'fixed-window': 1,
  'sliding-window': 2,
  'sliding-log': 3,
  'token-bucket': 4,
  'leaky-bucket': 5,
  gcra: 6,
} as const;

import { CHARGE_FUNCTIONS } from './lua-charges.js';
import {
  CHECK_SNIPPETS,
  fmt,
  LOG_ENTRY,
  LOG_ENTRY_SIZE,
  LOG_HEADER,
  LOG_HEADER_SIZE,
  newestEntryTime,
  READ_CLOCK,
  write,
} from './lua-checks.js';
import { LUA_SOURCES } from './lua-sources.js';

/**
 * The start of every script. With `lazyServerTime` (the batch scripts), NOW stays nil under the
 * server clock until a step needs it: a stored key tells the time from its own expiry (PTTL; see
 * lua-checks.ts), and TIME with the parsing of its reply was a ninth to a sixth of a lone decision's
 * cost in Redis. Code that may run first under a lazy NOW reads it with READ_CLOCK.
 */
function prelude(lazyServerTime: boolean): string {
  return `
local sub, find, sformat, floor, ceil, max, min = string.sub, string.find, string.format, math.floor, math.ceil, math.max, math.min
-- Globals are table lookups on every use: keep the ones the hot loop touches in locals.
local call, tonumber, type, KEYS, ARGV = redis.call, tonumber, type, KEYS, ARGV
-- NOW: the time in ms. The server clock (Redis's) makes every application server agree, whatever
-- its own clock says.
local NOW, SERVER
if ARGV[1] == '' then
  ${lazyServerTime ? '-- Read when first needed (see prelude() in lua.ts).' : READ_CLOCK}
  SERVER = true
else
  NOW = tonumber(ARGV[1])
  SERVER = false
end
local GRACE = 0
if ARGV[2] ~= '0' then GRACE = tonumber(ARGV[2]) end
-- Whether SET takes PXAT (Redis 6.2): REDIS_VERSION_NUM came with Redis 7.0.
local PXAT = redis.REDIS_VERSION_NUM ~= nil
-- Writes that decide go through WCALL (lua-checks.ts, write); WERR keeps the first refused write's
-- message, returned after the decisions.
local WCALL, WERR = redis.pcall, false
`;
}
const PRELUDE = prelude(false);

/** The block check and the block written by a committed rejection (the memory store's decide()). */
const BLOCKED = `
  local blocked = false
  if blockMs > 0 then
    ${READ_CLOCK}
    local bv = call('GET', bkey)
    if bv then
      local untilMs = tonumber(bv)
      if untilMs > NOW then ok, remaining, reset, retry, reason, blocked = 0, 0, untilMs - NOW, untilMs - NOW, 2, true end
    end
  end`;
const BLOCK = `if ok == 0 and commit and blockMs > 0 then
    ${write(`'SET', bkey, ${fmt('NOW + blockMs')}, 'PX', ${fmt('blockMs + GRACE')}`)}
  end`;

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

/** The leaky bucket's decisions carry a delay (the request's turn in the queue). */
const shapes = (code: number) => code === ALGORITHM_CODES['leaky-bucket'];

/** Lua setting `packs`: whether the item's decision goes back as one integer (PACKED_RESET_LIMIT). */
function packable(code: number): string {
  const fits = `remaining >= 0 and remaining < ${PACKED_REMAINING_LIMIT} and reset >= 0 and remaining % 1 == 0 and reset % 1 == 0`;
  if (!shapes(code)) {
    return `  -- An allowed decision without a delay, the usual one, is one integer when it fits.
  local packs = ok == 1 and retry == 0 and reason == 0 and delay == -1 and ${fits} and reset < ${PACKED_RESET_LIMIT}`;
  }
  return `  -- An allowed decision is one integer when it fits; q says which of two the delay is.
  local q = -1
  if ok == 1 and reason == 0 then q = reset - delay - floor(((commit and cost > 0) and cost * T or 0) / scale) end
  local packs = (q == 0 or q == 1) and ${fits} and reset < ${PACKED_SHAPED_RESET_LIMIT}`;
}

/** Lua: the packed integer of the item's decision. */
function packed(code: number): string {
  return shapes(code)
    ? `remaining * ${PACKED_RESET_LIMIT} + reset * 2 + q`
    : `remaining * ${PACKED_RESET_LIMIT} + reset`;
}

/**
 * The batch-check script of one algorithm: independent decisions, one after the other — the same as
 * that many separate calls, in one round trip. After ARGV[3], one argument per item: '1' for the usual
 * item (commit, cost 1, the first policy), else 'commit:cost:policy index' (script-args.ts); then the
 * policies, each as its BATCH_POLICY_FIELDS. KEYS per item: its state key, then its block key only when
 * its policy blocks (blockMs > 0). The algorithm's snippet is pasted into the loop.
 *
 * With `baked` (a policy's own script: policy-scripts.ts), policy 1 is written into the source and
 * does not travel: ARGV holds policies 2 on, and ARGV[3] counts only those.
 */
function batchScript(code: number, baked?: BakedPolicy): string {
  const fields: readonly string[] = BATCH_POLICY_FIELDS[batchPolicyKind(code)];
  const width = fields.length;
  const all = Object.values(BATCH_LOCAL);
  /** Lua reading the policy whose fields start after ARGV[b] into the locals (the unread ones 0). */
  const readPolicy = (b: string) =>
    `${all.join(', ')} = ${Object.keys(BATCH_LOCAL)
      .map((field) => {
        const i = fields.indexOf(field);
        return i === -1 ? '0' : `tonumber(ARGV[${b} + ${i + 1}], 16)`;
      })
      .join(', ')}`;
  return `${prelude(true)}
local n, k, last = 0, 1, #ARGV
if ARGV[3] ~= '0' then last = last - tonumber(ARGV[3]) * ${width} end
-- A lone item's decision is the reply (below); a batch's go into out, sized for one item up front:
-- growing an empty table to six entries takes four resizes.
local out = last ~= 4 and {0, 0, 0, 0, 0, 0}
-- The first policy, read once per call: a batch is mostly one policy.
local L1, P1, C1, S1, T1, CT1, B1
${
  baked === undefined
    ? `do
  local ${readPolicy('last')}
  L1, P1, C1, S1, T1, CT1, B1 = ${all.join(', ')}
end`
    : `L1, P1, C1, S1, T1, CT1, B1 = ${(Object.keys(BATCH_LOCAL) as (keyof BakedPolicy)[])
        .map((field) => (fields.includes(field) ? String(baked[field]) : '0'))
        .join(', ')}`
}
for i = 4, last do
  local f = ARGV[i]
  local commit, cost, index = true, 1, 1
  if f ~= '1' then
    local x = find(f, ':', 1, true)
    local y = find(f, ':', x + 1, true)
    commit, cost, index = sub(f, 1, x - 1) == '1', tonumber(sub(f, x + 1, y - 1)), tonumber(sub(f, y + 1))
  end
  local limit, period, capacity, scale, T, capT, blockMs = L1, P1, C1, S1, T1, CT1, B1
  if index ~= 1 then
    local b = last + (index - ${baked === undefined ? 1 : 2}) * ${width}
    ${readPolicy('b')}
  end
  local key, bkey = KEYS[k], nil
  if blockMs > 0 then
    bkey = KEYS[k + 1]
    k = k + 2
  else
    k = k + 1
  end
  local ok, remaining, reset, retry, reason, delay = 0, 0, 0, 0, 0, -1
${BLOCKED}
  if not blocked then
    repeat
${CHECK_SNIPPETS[code]}
    until true
    if reason == 3 then ok = 0 else
    ${BLOCK}
    end
  end
${packable(code)}
  if last == 4 then
    -- A lone decision is the whole reply: one integer when it packs (a table costs Redis more to send).
    if packs and not WERR then return ${packed(code)} end
    return {-1 - ok, remaining, reset, retry, reason, delay, WERR or nil}
  end
  if packs then
    n = n + 1
    out[n] = ${packed(code)}
  else
    out[n + 1], out[n + 2], out[n + 3], out[n + 4], out[n + 5], out[n + 6] = -1 - ok, remaining, reset, retry, reason, delay
    n = n + 6
  end
end
if WERR then
  out[n + 1] = WERR
  n = n + 1
end
-- The reply ends at the first nil: the preallocated slots past it are not part of it.
if n < 6 then out[n + 1] = nil end
return out
`;
}

/** Helpers of the less frequent scripts (several limits, refunds), where clarity beats speed. */
const HELPERS = `
local CHECK, REFUND, CHARGE = {}, {}, {}
local function fmt(x) return ${fmt('x')} end
local function nums2(v)
  local i = find(v, ':', 1, true)
  return tonumber(sub(v, 1, i - 1)), tonumber(sub(v, i + 1))
end
local function nums3(v)
  local i = find(v, ':', 1, true)
  local j = find(v, ':', i + 1, true)
  return tonumber(sub(v, 1, i - 1)), tonumber(sub(v, i + 1, j - 1)), tonumber(sub(v, j + 1))
end
-- Writes a state that lives until at (ms on NOW's clock; putAt in lua-checks.ts). Every key gets
-- a TTL; a state that is already as good as a fresh one is deleted instead.
local function put(key, value, at)
  if at + GRACE <= NOW then call('DEL', key)
  elseif not SERVER then call('SET', key, value, 'PX', fmt(at - NOW + GRACE))
  elseif PXAT then call('SET', key, value, 'PXAT', fmt(at))
  else
    call('SET', key, value)
    call('PEXPIREAT', key, fmt(at))
  end
end
-- The policies (ARGV[3] of them, 8 arguments each, at the end), and the index of the last
-- argument before them.
local function read_policies()
  local n = tonumber(ARGV[3])
  local ps, last = {}, #ARGV - n * 8
  for k = 1, n do
    local i = last + (k - 1) * 8
    ps[k] = { alg = tonumber(ARGV[i + 1], 16), limit = tonumber(ARGV[i + 2], 16), period = tonumber(ARGV[i + 3], 16),
      capacity = tonumber(ARGV[i + 4], 16), scale = tonumber(ARGV[i + 5], 16), T = tonumber(ARGV[i + 6], 16),
      capT = tonumber(ARGV[i + 7], 16), block = tonumber(ARGV[i + 8], 16) }
  end
  return ps, last
end
-- One decision as a table {ok, remaining, reset, retry, reason, delay}.
local function decide(key, bkey, p, cost, commit)
  local blockMs = p.block
  local ok, remaining, reset, retry, reason, delay = 0, 0, 0, 0, 0, -1
${BLOCKED}
  if blocked then return {ok, remaining, reset, retry, reason, delay} end
  local d = CHECK[p.alg](key, p, cost, commit)
  if d[5] == 3 then return d end
  ok = d[1]
  ${BLOCK}
  return d
end
local function block(bkey, p)
  ${write("'SET', bkey, fmt(NOW + p.block), 'PX', fmt(p.block + GRACE)")}
end
`;

/** Each algorithm's snippet wrapped in a function of (key, policy, cost, commit) → decision table. */
const CHECK_FUNCTIONS = Object.entries(CHECK_SNIPPETS)
  .map(
    ([code, snippet]) => `
CHECK[${code}] = function(key, p, cost, commit)
  local limit, period, capacity, scale, T, capT = p.limit, p.period, p.capacity, p.scale, p.T, p.capT
  local ok, remaining, reset, retry, reason, delay = 0, 0, 0, 0, 0, -1
  repeat
${snippet}
  until true
  if reason == 3 then ok = 0 end
  return {ok, remaining, reset, retry, reason, delay}
end`,
  )
  .join('\n');

// The refund step of each algorithm (`refund` in src/algorithms/*.ts).
const REFUND_FUNCTIONS = `
REFUND[1] = function(key, p, cost)
  local P = p.period
  local window = floor(NOW / P)
  local v = call('GET', key)
  if not v then return end
  if SERVER then
    call('SET', key, max(0, tonumber(v) - cost))
    call('PEXPIREAT', key, fmt((window + 1) * P - 1))
  else
    local w, c = nums2(v)
    if w == window then put(key, fmt(w) .. ':' .. fmt(max(0, c - cost)), (window + 1) * P) end
  end
end
REFUND[2] = function(key, p, cost)
  local P = p.period
  local window = floor(NOW / P)
  local v = call('GET', key)
  if not v then return end
  local w, a, b = nums3(v)
  if w == window then put(key, fmt(w) .. ':' .. fmt(a) .. ':' .. fmt(max(0, b - cost)), (window + 2) * P) end
end
-- The sliding log's layout: LOG_HEADER, LOG_ENTRY in lua-checks.ts.
local function sl_load(key, P)
  local blob = call('GET', key)
  if not blob then return nil, ${LOG_HEADER_SIZE}, 0, ${LOG_HEADER_SIZE + 1} end
  local n = #blob
  local total, head = struct.unpack('${LOG_HEADER}', blob)
  local oldest = NOW - P
  local units, i = 0, head
  while i < n do
    local ts, u = struct.unpack('${LOG_ENTRY}', blob, i)
    if ts > oldest then break end
    units = units + u
    i = i + ${LOG_ENTRY_SIZE}
  end
  return blob, n, total - units, i
end
REFUND[3] = function(key, p, cost)
  local P = p.period
  local blob, n, count, idx = sl_load(key, P)
  if not blob then return end
  -- Give back the newest units first: they are the ones the caller just took.
  local left, total, stop, tail = cost, count, n, ''
  while left > 0 and stop >= idx + ${LOG_ENTRY_SIZE - 1} do
    local ts, u = struct.unpack('${LOG_ENTRY}', blob, stop - ${LOG_ENTRY_SIZE - 1})
    local back = min(u, left)
    left = left - back
    total = total - back
    stop = stop - ${LOG_ENTRY_SIZE}
    if back < u then tail = struct.pack('${LOG_ENTRY}', ts, u - back) end
  end
  local live = sub(blob, idx, stop) .. tail
  if #live == 0 then
    call('DEL', key)
    return
  end
  put(key, struct.pack('${LOG_HEADER}', total, ${LOG_HEADER_SIZE + 1}) .. live, ${newestEntryTime('live')} + P)
end
-- GCRA and both buckets keep the theoretical arrival time (lua-checks.ts).
local function tat_refund(key, p, cost)
  local v = call('GET', key)
  if not v then return end
  local nowT = NOW * p.scale
  local s = max(nowT, max(tonumber(v), nowT) - cost * p.T)
  put(key, fmt(s), ceil(s / p.scale))
end
REFUND[4], REFUND[5], REFUND[6] = tat_refund, tat_refund, tat_refund
`;

const MANY = LUA_SOURCES['redis/many'];

const REFUNDS = LUA_SOURCES['redis/refunds'];

const ACQUIRE = LUA_SOURCES['redis/acquire'];

const RELEASE = LUA_SOURCES['redis/release'];

/**
 * The source of the batch-check script of one algorithm (code 1–6); with `baked`, the script of that
 * one policy (its BATCH_POLICY_FIELDS as numbers; see batchScript).
 */
export function checkScriptSource(code: number, baked?: BakedPolicy): string {
  return batchScript(code, baked);
}

/** Script sources by name. */
export const SCRIPT_SOURCES = {
  many: PRELUDE + HELPERS + CHECK_FUNCTIONS + REFUND_FUNCTIONS + CHARGE_FUNCTIONS + MANY,
  refund: PRELUDE + HELPERS + REFUND_FUNCTIONS + REFUNDS,
  acquire: PRELUDE + HELPERS + ACQUIRE,
  release: PRELUDE + HELPERS + RELEASE,
} as const;
