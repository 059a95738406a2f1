/**
 * The Lua of `'eventual'` mode. A window's count is a G-counter: a hash with, per region `r`, the field
 * `+r` (units that region took) and `-r` (units it gave back: refunds and resets). Only region `r`
 * ever increments its own two fields; the others only merge them, keeping the larger value. A merge is
 * therefore idempotent (replaying it changes nothing), commutative and monotonic, so duplicated,
 * reordered or replayed sync messages — after a partition, say — never count a request twice.
 * The window's total is Σ(+) − Σ(−), never below 0.
 *
 * Every script here runs in one region's Redis. A decision reads that region's view (its own fields,
 * exact, and the others' as of their last sync) and adds to its own field: one round trip, atomic.
 */
import { createHash } from 'node:crypto';
import { fmt } from '../redis/lua-checks.js';
import type { Script } from '../redis/scripts.js';

function script(name: string, source: string): Script {
  return { name, source, sha: createHash('sha1').update(source).digest('hex') };
}

const PRELUDE = `
local call, tonumber, byte = redis.call, tonumber, string.byte
local floor, max, min = math.floor, math.max, math.min
local sformat = string.format
local function fmt(x) return ${fmt('x')} end
-- The window's total: the sum of every region's '+' field minus every '-' field, never below 0.
local function total(key)
  local t = call('HGETALL', key)
  local s = 0
  for i = 1, #t, 2 do
    if byte(t[i], 1) == 43 then s = s + tonumber(t[i + 1]) else s = s - tonumber(t[i + 1]) end
  end
  if s < 0 then return 0 end
  return s
end
-- Keeps the larger of the stored and the incoming value of a field (the G-counter merge).
local function merge_field(key, field, value)
  if value <= 0 then return false end
  local old = tonumber(call('HGET', key, field) or '0')
  if value > old then
    call('HSET', key, field, fmt(value))
    return true
  end
  return false
end
-- Remembers the newest window of a (key, policy), for reset.
local function mark(marker, window, ttl)
  local old = call('GET', marker)
  if not old or tonumber(old) < window then call('SET', marker, fmt(window), 'PX', fmt(ttl)) end
end
`;

// ARGV: now, grace, this region, all-or-nothing (1/0), commit (1/0), then per item 6 fields: the
// algorithm (1 fixed, 2 sliding), then in hexadecimal (redis/hex.ts) limit, period, capacity, blockMs
// and cost. KEYS per item: the window's hash, the previous window's hash, the marker, the block key.
// Returns per item: status (1 fits, 0 does not, 2 blocked), previous total, current total (before
// this item took anything), block end (or 0).
const CHECK = `${PRELUDE}
local NOW, GRACE, ME, ALL, COMMIT = tonumber(ARGV[1]), tonumber(ARGV[2]), ARGV[3], ARGV[4] == '1', ARGV[5] == '1'
local PLUS = '+' .. ME
local items, k = {}, 1
for i = 6, #ARGV, 6 do
  items[#items + 1] = { cur = KEYS[k], prev = KEYS[k + 1], marker = KEYS[k + 2], bkey = KEYS[k + 3],
    alg = tonumber(ARGV[i]), limit = tonumber(ARGV[i + 1], 16), period = tonumber(ARGV[i + 2], 16),
    capacity = tonumber(ARGV[i + 3], 16), block = tonumber(ARGV[i + 4], 16), cost = tonumber(ARGV[i + 5], 16) }
  k = k + 4
end
local function look(it)
  if it.block > 0 then
    local b = call('GET', it.bkey)
    if b and tonumber(b) > NOW then return 2, 0, 0, tonumber(b) end
  end
  local curr = total(it.cur)
  local prev = 0
  if it.alg == 2 then prev = total(it.prev) end
  if it.cost > it.capacity then return 0, prev, curr, 0 end
  local P = it.period
  if it.alg == 1 then
    if curr + it.cost > it.limit then return 0, prev, curr, 0 end
  else
    local elapsed = NOW - floor(NOW / P) * P
    if prev * (P - elapsed) + (curr + it.cost) * P > it.limit * P then return 0, prev, curr, 0 end
  end
  return 1, prev, curr, 0
end
local function take(it)
  if it.cost <= 0 then return end
  local P = it.period
  local w = floor(NOW / P)
  -- Long enough for the window to count (the sliding window also weighs the previous one), plus the
  -- grace that lets late syncs from other regions still find it.
  local ttl = (w + it.alg) * P - NOW + GRACE
  -- The TTL and the marker name the window's end, the same instant at every take: set them at this
  -- region's first take in the window (its field was new), not at every decision.
  if call('HINCRBY', it.cur, PLUS, it.cost) == it.cost then
    call('PEXPIRE', it.cur, fmt(ttl))
    mark(it.marker, w, ttl)
  end
end
local function block(it)
  if it.block > 0 then call('SET', it.bkey, fmt(NOW + it.block), 'PX', fmt(it.block + GRACE)) end
end
local out, fits = {}, true
local looks = {}
for n, it in ipairs(items) do
  local s, p, c, b = look(it)
  looks[n] = { s, p, c, b }
  if s ~= 1 then fits = false end
  if not ALL and COMMIT then
    if s == 1 then take(it) elseif s == 0 then block(it) end
  end
end
if ALL and COMMIT then
  if fits then
    -- Take in order, re-checking: one (key, policy) twice must fit twice. If it does not, undo what
    -- this script took — no other client saw it, so the counter stays a G-counter.
    for n, it in ipairs(items) do
      local s, p, c, b = look(it)
      if s ~= 1 then
        looks[n] = { s, p, c, b }
        for m = 1, n - 1 do
          if items[m].cost > 0 then call('HINCRBY', items[m].cur, PLUS, -items[m].cost) end
        end
        break
      end
      take(it)
    end
  else
    for n, it in ipairs(items) do if looks[n][1] == 0 then block(it) end end
  end
end
for _, l in ipairs(looks) do for j = 1, 4 do out[#out + 1] = l[j] end end
return out
`;

// KEYS: the window's hash. ARGV: this region, cost. Gives back at most what the window holds.
const REFUND = `${PRELUDE}
local t = total(KEYS[1])
local give = min(tonumber(ARGV[2]), t)
if give > 0 then call('HINCRBY', KEYS[1], '-' .. ARGV[1], give) end
return give
`;

// KEYS: the marker, the block key. ARGV: this region. Subtracts everything this region sees in the
// newest two windows (in its own '-' field, so the reset reaches every region by the next sync) and
// lifts the block. Returns the hashes it changed.
const RESET = `${PRELUDE}
local MINUS = '-' .. ARGV[1]
call('DEL', KEYS[2])
local w = call('GET', KEYS[1])
local changed = {}
if not w then return changed end
w = tonumber(w)
for _, window in ipairs({ w, w - 1 }) do
  local key = KEYS[1] .. '@' .. fmt(window)
  local t = total(key)
  if t > 0 then
    call('HINCRBY', key, MINUS, t)
    changed[#changed + 1] = key
  end
end
return changed
`;

// KEYS: window hashes. ARGV: this region. Returns per key its own two fields and its PTTL, read by
// the sync loop to send to the other regions.
const READ_OWN = `
local out = {}
for i, key in ipairs(KEYS) do
  local v = redis.call('HMGET', key, '+' .. ARGV[1], '-' .. ARGV[1])
  out[#out + 1] = tonumber(v[1] or '0')
  out[#out + 1] = tonumber(v[2] or '0')
  out[#out + 1] = redis.call('PTTL', key)
end
return out
`;

// KEYS per item: the window's hash, its marker. ARGV: the sending region, then per item: its '+',
// its '-', the TTL it has there (ms), the window. Idempotent: see the top of this file.
const MERGE = `${PRELUDE}
local SRC, k = ARGV[1], 1
local changed = 0
for i = 2, #ARGV, 4 do
  local key, marker = KEYS[k], KEYS[k + 1]
  k = k + 2
  local plus, minus, ttl, w = tonumber(ARGV[i]), tonumber(ARGV[i + 1]), tonumber(ARGV[i + 2]), tonumber(ARGV[i + 3])
  if ttl > 0 then
    local a = merge_field(key, '+' .. SRC, plus)
    local b = merge_field(key, '-' .. SRC, minus)
    if a or b then changed = changed + 1 end
    if call('EXISTS', key) == 1 and call('PTTL', key) < ttl then call('PEXPIRE', key, fmt(ttl)) end
    if a then mark(marker, w, ttl) end
  end
end
return changed
`;

/** Decides items in one region (see CHECK). */
export const EVENTUAL_CHECK = script('mr:eventual:check', CHECK);
/** Gives back units (into the region's own '-' field). */
export const EVENTUAL_REFUND = script('mr:eventual:refund', REFUND);
/** Forgets what the region sees of a key. */
export const EVENTUAL_RESET = script('mr:eventual:reset', RESET);
/** Reads the region's own fields, for the sync loop. */
export const EVENTUAL_READ_OWN = script('mr:eventual:read', READ_OWN);
/** Merges another region's fields (max per field). */
export const EVENTUAL_MERGE = script('mr:eventual:merge', MERGE);
