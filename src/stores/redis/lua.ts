/**
 * The Lua run inside Redis: a line-for-line port of the pure steps in src/algorithms (and of the memory
 * store's block and multi-limit logic), so a Redis store and a memory store make the same decisions.
 * Lua numbers are doubles like JavaScript's and every quantity is an integer below 2^53 (see
 * ResolvedPolicy), so the arithmetic is bit for bit the same.
 *
 * Every script starts with the PRELUDE and takes the same first two ARGV:
 *   ARGV[1]  the caller's time in ms, or '' to read Redis `TIME` (the server clock)
 *   ARGV[2]  grace ms added to every TTL (0 with the server clock; see GRACE in redis-store.ts)
 * Policies travel once per call, 8 ARGV each (`alg limit periodMs capacity scale intervalTicks
 * capacityTicks blockMs`), and items refer to them by index. Every item has two KEYS: its state key and
 * its block key (both in the same hash slot).
 *
 * A decision comes back as 6 integers: allowed (1/0), remaining, resetMs, retryAfterMs (-1 = never),
 * reason (0 none, 1 cost-exceeds-capacity, 2 blocked), delayMs (-1 = none).
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

const PRELUDE = `
local sub, find, sformat, floor, ceil, max, min = string.sub, string.find, string.format, math.floor, math.ceil, math.max, math.min
local call = redis.call
local function fmt(x) return sformat('%.17g', x) end
local NOW, SERVER
if ARGV[1] == '' then
  -- Server time: every application server agrees, whatever its own clock says.
  local t = call('TIME')
  NOW = tonumber(t[1]) * 1000 + floor(tonumber(t[2]) / 1000)
  SERVER = true
else
  NOW = tonumber(ARGV[1])
  SERVER = false
end
local GRACE = tonumber(ARGV[2])
local CHECK, REFUND = {}, {}
local function nums2(v)
  local i = find(v, ':', 1, true)
  return tonumber(sub(v, 1, i - 1)), tonumber(sub(v, i + 1))
end
local function nums3(v)
  local i = find(v, ':', 1, true)
  local j = find(v, ':', i + 1, true)
  return tonumber(sub(v, 1, i - 1)), tonumber(sub(v, i + 1, j - 1)), tonumber(sub(v, j + 1))
end
-- Writes a state that lives ttl ms (plus grace). Every key gets a TTL; a state that is already as good
-- as a fresh one is deleted instead.
local function put(key, value, ttl)
  ttl = ttl + GRACE
  if ttl > 0 then call('SET', key, value, 'PX', fmt(ttl)) else call('DEL', key) end
end
local function read_policies(at)
  local n = tonumber(ARGV[at])
  local ps, i = {}, at + 1
  for k = 1, n do
    ps[k] = { alg = tonumber(ARGV[i]), limit = tonumber(ARGV[i + 1]), period = tonumber(ARGV[i + 2]),
      capacity = tonumber(ARGV[i + 3]), scale = tonumber(ARGV[i + 4]), T = tonumber(ARGV[i + 5]),
      capT = tonumber(ARGV[i + 6]), block = tonumber(ARGV[i + 7]) }
    i = i + 8
  end
  return ps, i
end
local function blocked(bkey)
  local v = call('GET', bkey)
  if v then
    local untilMs = tonumber(v)
    if untilMs > NOW then return {0, 0, untilMs - NOW, untilMs - NOW, 2, -1} end
  end
  return nil
end
local function block(bkey, p)
  call('SET', bkey, fmt(NOW + p.block), 'PX', fmt(p.block + GRACE))
end
-- The memory store's decide(): a blocked key is rejected first; a committed rejection blocks the key.
local function decide(key, bkey, p, cost, commit)
  if p.block > 0 then
    local b = blocked(bkey)
    if b then return b end
  end
  local d = CHECK[p.alg](key, p, cost, commit)
  if d[1] == 0 and commit and p.block > 0 then block(bkey, p) end
  return d
end
`;

// State: with the client clock "window:count". With the server clock just the count, as an integer
// (Redis shares small integers, so a key costs no more than a plain counter), and the window is the
// key's expiry: PEXPIREAT the window's last millisecond. Redis hides a key once its frozen script
// time is past that, so a visible key belongs to the current window.
const FIXED_WINDOW = `
CHECK[1] = function(key, p, cost, commit)
  local P = p.period
  local window = floor(NOW / P)
  local v = call('GET', key)
  local count = 0
  if v then
    if SERVER then
      count = tonumber(v)
    else
      local w, c = nums2(v)
      if w == window then count = c end
    end
  end
  local toEnd = (window + 1) * P - NOW
  if cost > p.capacity then
    local reset = 0
    if count > 0 then reset = toEnd end
    return {0, max(0, p.limit - count), reset, -1, 1, -1}
  end
  if count + cost > p.limit then return {0, p.limit - count, toEnd, toEnd, 0, -1} end
  local taken = 0
  if commit then taken = cost end
  if taken > 0 then
    if SERVER then
      if v then call('INCRBY', key, taken) else call('SET', key, taken) end
      call('PEXPIREAT', key, fmt((window + 1) * P - 1))
    else
      put(key, fmt(window) .. ':' .. fmt(count + taken), toEnd)
    end
  end
  local after = count + taken
  local reset = 0
  if after > 0 then reset = toEnd end
  return {1, p.limit - after, reset, 0, 0, -1}
end
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
    if w == window then put(key, fmt(w) .. ':' .. fmt(max(0, c - cost)), (window + 1) * P - NOW) end
  end
end
`;

// State: "window:previous count:current count".
const SLIDING_WINDOW = `
local function sw_remaining(p, prev, curr, elapsed)
  local P = p.period
  return max(0, floor((p.limit * P - prev * (P - elapsed)) / P) - curr)
end
local function sw_reset(P, prev, curr, elapsed)
  if curr > 0 then return 2 * P - elapsed end
  if prev > 0 then return P - elapsed end
  return 0
end
local function sw_retry(p, prev, curr, elapsed, cost)
  local P = p.period
  local roomNow = (p.limit - curr - cost) * P
  if roomNow >= 0 and prev > 0 then
    local at = P - floor(roomNow / prev)
    if at < P then return at - elapsed end
  end
  if curr == 0 then return P - elapsed end
  local roomNext = (p.limit - cost) * P
  local atNext = max(0, P - floor(roomNext / curr))
  if atNext < P then return P - elapsed + atNext end
  return 2 * P - elapsed
end
CHECK[2] = function(key, p, cost, commit)
  local P = p.period
  local window = floor(NOW / P)
  local elapsed = NOW - window * P
  local prev, curr = 0, 0
  local v = call('GET', key)
  if v then
    local w, a, b = nums3(v)
    if w == window then prev, curr = a, b elseif w == window - 1 then prev = b end
  end
  if cost > p.capacity then
    return {0, sw_remaining(p, prev, curr, elapsed), sw_reset(P, prev, curr, elapsed), -1, 1, -1}
  end
  if prev * (P - elapsed) + (curr + cost) * P > p.limit * P then
    return {0, sw_remaining(p, prev, curr, elapsed), sw_reset(P, prev, curr, elapsed),
      sw_retry(p, prev, curr, elapsed, cost), 0, -1}
  end
  local taken = 0
  if commit then taken = cost end
  if taken > 0 then
    put(key, fmt(window) .. ':' .. fmt(prev) .. ':' .. fmt(curr + taken), (window + 2) * P - NOW)
  end
  return {1, sw_remaining(p, prev, curr + taken, elapsed), sw_reset(P, prev, curr + taken, elapsed), 0, 0, -1}
end
REFUND[2] = function(key, p, cost)
  local P = p.period
  local window = floor(NOW / P)
  local v = call('GET', key)
  if not v then return end
  local w, a, b = nums3(v)
  if w == window then put(key, fmt(w) .. ':' .. fmt(a) .. ':' .. fmt(max(0, b - cost)), (window + 2) * P - NOW) end
end
`;

// State: a binary string. A 16-byte header (total units of the live entries, byte position of the
// first live entry) and then (timestamp, units) pairs of doubles, oldest first. Only admitted requests
// are logged, one pair per distinct timestamp, so a key holds at most `limit` pairs. Expired pairs are
// skipped by moving the head, and the string is rewritten only once the dead prefix is as long as the
// live part, which keeps every step O(1) amortised (the memory store compacts its array the same way).
const SLIDING_LOG = `
local HDR = 16
local function sl_load(key, P)
  local blob = call('GET', key)
  if not blob then return nil, HDR, 0, HDR + 1 end
  local n = #blob
  local total, head = struct.unpack('<dd', blob)
  local oldest = NOW - P
  local units, i = 0, head
  while i < n do
    local ts, u = struct.unpack('<dd', blob, i)
    if ts > oldest then break end
    units = units + u
    i = i + 16
  end
  return blob, n, total - units, i
end
CHECK[3] = function(key, p, cost, commit)
  local P = p.period
  local blob, n, count, idx = sl_load(key, P)
  local function reset_of(c)
    if c > 0 then return struct.unpack('<d', blob, n - 15) + P - NOW end
    return 0
  end
  if cost > p.capacity then return {0, max(0, p.limit - count), reset_of(count), -1, 1, -1} end
  if count + cost > p.limit then
    -- Wait until enough of the oldest entries leave the window.
    local freed, i = 0, idx
    while count - freed + cost > p.limit do
      local _, u = struct.unpack('<dd', blob, i)
      freed = freed + u
      i = i + 16
    end
    local ts = struct.unpack('<d', blob, i - 16)
    return {0, p.limit - count, reset_of(count), ts + P - NOW, 0, -1}
  end
  local taken = 0
  if commit then taken = cost end
  if taken > 0 then
    local after = count + taken
    local lastPos = n - 15
    local merge = lastPos >= idx and struct.unpack('<d', blob, lastPos) == NOW
    local dead = idx - HDR - 1
    if blob == nil or (dead > 0 and dead * 2 >= n - HDR) then
      local live = ''
      if blob then live = sub(blob, idx) end
      if merge then
        local ts, u = struct.unpack('<dd', blob, lastPos)
        live = sub(live, 1, #live - 16) .. struct.pack('<dd', ts, u + taken)
      else
        live = live .. struct.pack('<dd', NOW, taken)
      end
      put(key, struct.pack('<dd', after, HDR + 1) .. live, P)
    else
      call('SETRANGE', key, 0, struct.pack('<dd', after, idx))
      if merge then
        local _, u = struct.unpack('<dd', blob, lastPos)
        call('SETRANGE', key, lastPos + 7, struct.pack('<d', u + taken))
      else
        call('APPEND', key, struct.pack('<dd', NOW, taken))
      end
      call('PEXPIRE', key, fmt(P + GRACE))
    end
    return {1, p.limit - after, P, 0, 0, -1}
  end
  return {1, p.limit - count, reset_of(count), 0, 0, -1}
end
REFUND[3] = function(key, p, cost)
  local P = p.period
  local blob, n, count, idx = sl_load(key, P)
  if not blob then return end
  -- Give back the newest units first: they are the ones the caller just took.
  local left, total, stop, tail = cost, count, n, ''
  while left > 0 and stop >= idx + 15 do
    local ts, u = struct.unpack('<dd', blob, stop - 15)
    local back = min(u, left)
    left = left - back
    total = total - back
    stop = stop - 16
    if back < u then tail = struct.pack('<dd', ts, u - back) end
  end
  local live = sub(blob, idx, stop) .. tail
  if #live == 0 then
    call('DEL', key)
    return
  end
  put(key, struct.pack('<dd', total, HDR + 1) .. live, struct.unpack('<d', live, #live - 15) + P - NOW)
end
`;

// State: "level in ticks:last update ms" (src/algorithms/bucket.ts).
const BUCKET = `
local function bucket(shaping)
  return function(key, p, cost, commit)
    local v = call('GET', key)
    local stored, last = 0, 0
    if v then stored, last = nums2(v) end
    local level = max(0, stored - max(0, NOW - last) * p.scale)
    local T = p.T
    if cost > p.capacity then return {0, floor((p.capT - level) / T), ceil(level / p.scale), -1, 1, -1} end
    local after = level + cost * T
    if after > p.capT then
      return {0, floor((p.capT - level) / T), ceil(level / p.scale), ceil((after - p.capT) / p.scale), 0, -1}
    end
    local held = level
    if commit and cost > 0 then
      held = after
      last = max(NOW, last)
      put(key, fmt(after) .. ':' .. fmt(last), last + ceil(after / p.scale) - NOW)
    end
    local delay = -1
    if shaping then delay = ceil(level / p.scale) end
    return {1, floor((p.capT - held) / T), ceil(held / p.scale), 0, 0, delay}
  end
end
local function bucket_refund(key, p, cost)
  local v = call('GET', key)
  if not v then return end
  local stored, last = nums2(v)
  local level = max(0, max(0, stored - max(0, NOW - last) * p.scale) - cost * p.T)
  last = max(NOW, last)
  put(key, fmt(level) .. ':' .. fmt(last), last + ceil(level / p.scale) - NOW)
end
`;
const TOKEN_BUCKET = `${BUCKET}
CHECK[4] = bucket(false)
REFUND[4] = bucket_refund
`;
const LEAKY_BUCKET = `${BUCKET}
CHECK[5] = bucket(true)
REFUND[5] = bucket_refund
`;

// State: the theoretical arrival time, in ticks (src/algorithms/gcra.ts).
const GCRA = `
CHECK[6] = function(key, p, cost, commit)
  local v = call('GET', key)
  local stored = 0
  if v then stored = tonumber(v) end
  local nowT = NOW * p.scale
  local tat = max(stored, nowT)
  local backlog = tat - nowT
  local T = p.T
  if cost > p.capacity then return {0, floor((p.capT - backlog) / T), ceil(backlog / p.scale), -1, 1, -1} end
  local newTat = tat + cost * T
  if newTat - nowT > p.capT then
    return {0, floor((p.capT - backlog) / T), ceil(backlog / p.scale), ceil((newTat - nowT - p.capT) / p.scale), 0, -1}
  end
  local held = backlog
  if commit and cost > 0 then
    held = newTat - nowT
    put(key, fmt(newTat), ceil(newTat / p.scale) - NOW)
  end
  return {1, floor((p.capT - held) / T), ceil(held / p.scale), 0, 0, -1}
end
REFUND[6] = function(key, p, cost)
  local v = call('GET', key)
  if not v then return end
  local nowT = NOW * p.scale
  local s = max(nowT, max(tonumber(v), nowT) - cost * p.T)
  put(key, fmt(s), ceil(s / p.scale) - NOW)
end
`;

/** Lua of each algorithm, by code. */
const ALGORITHM_LUA: Record<number, string> = {
  1: FIXED_WINDOW,
  2: SLIDING_WINDOW,
  3: SLIDING_LOG,
  4: TOKEN_BUCKET,
  5: LEAKY_BUCKET,
  6: GCRA,
};
const ALL_ALGORITHMS = FIXED_WINDOW + SLIDING_WINDOW + SLIDING_LOG + BUCKET + GCRA;
const ALL_BUCKETS = `
CHECK[4] = bucket(false)
REFUND[4] = bucket_refund
CHECK[5] = bucket(true)
REFUND[5] = bucket_refund
`;

// ARGV[3] = policy count, then policies, then per item: commit (1/0), cost, policy index.
// Independent decisions, one after the other: the same as that many separate calls, in one round trip.
const BATCH = `
local ps, i = read_policies(3)
local out, k, nargs = {}, 1, #ARGV
while i <= nargs do
  local d = decide(KEYS[k], KEYS[k + 1], ps[tonumber(ARGV[i + 2])], tonumber(ARGV[i + 1]), ARGV[i] == '1')
  for j = 1, 6 do out[#out + 1] = d[j] end
  i = i + 3
  k = k + 2
end
return out
`;

// ARGV[3] = commit, ARGV[4] = also return the looks, ARGV[5] = policy count, then policies, then per
// item: cost, policy index. All or nothing, exactly as the memory store's checkMany: look at every
// limit first, consume only when all allow, and when one (key, policy) appears twice and the second
// does not fit, give back what the first ones took. A script runs alone, so this is atomic.
const MANY = `
local commit, wantLooks = ARGV[3] == '1', ARGV[4] == '1'
local ps, i = read_policies(5)
local items, k, nargs = {}, 1, #ARGV
while i <= nargs do
  items[#items + 1] = {KEYS[k], KEYS[k + 1], ps[tonumber(ARGV[i + 1])], tonumber(ARGV[i])}
  i = i + 2
  k = k + 2
end
local looks, ok = {}, true
for n, it in ipairs(items) do
  looks[n] = decide(it[1], it[2], it[3], it[4], false)
  if looks[n][1] == 0 then ok = false end
end
local result = looks
if not ok then
  if commit then
    for n, it in ipairs(items) do
      if looks[n][1] == 0 and it[3].block > 0 then block(it[2], it[3]) end
    end
  end
elseif commit then
  local taken = {}
  for n, it in ipairs(items) do
    local d = decide(it[1], it[2], it[3], it[4], true)
    taken[n] = d
    if d[1] == 0 then
      for m = 1, n - 1 do REFUND[items[m][3].alg](items[m][1], items[m][3], items[m][4]) end
      for m = n + 1, #items do taken[m] = looks[m] end
      break
    end
  end
  result = taken
end
local out = {}
for _, d in ipairs(result) do for j = 1, 6 do out[#out + 1] = d[j] end end
if wantLooks then
  for _, d in ipairs(looks) do for j = 1, 6 do out[#out + 1] = d[j] end end
end
return out
`;

// ARGV[3] = policy count, then policies, then per item: cost, policy index.
const REFUNDS = `
local ps, i = read_policies(3)
local k, nargs = 1, #ARGV
while i <= nargs do
  local p = ps[tonumber(ARGV[i + 1])]
  REFUND[p.alg](KEYS[k], p, tonumber(ARGV[i]))
  i = i + 2
  k = k + 2
end
return 1
`;

// KEYS[1] = the lease set (member = lease id, score = expiry). ARGV[3] = limit, ARGV[4] = leaseMs,
// ARGV[5] = the new lease's id. Returns the 6 decision integers, then the lease id and expiry.
const ACQUIRE = `
local key = KEYS[1]
local limit, leaseMs, id = tonumber(ARGV[3]), tonumber(ARGV[4]), ARGV[5]
call('ZREMRANGEBYSCORE', key, '-inf', fmt(NOW))
local n = call('ZCARD', key)
local soonest, latest = 0, NOW
if n > 0 then
  soonest = tonumber(call('ZRANGE', key, 0, 0, 'WITHSCORES')[2]) - NOW
  latest = max(NOW, tonumber(call('ZRANGE', key, -1, -1, 'WITHSCORES')[2]))
end
latest = latest - NOW
if n >= limit then
  if limit == 0 then return {0, 0, latest, -1, 1, -1, '', 0} end
  return {0, 0, latest, soonest, 0, -1, '', 0}
end
local expiresAt = NOW + leaseMs
call('ZADD', key, fmt(expiresAt), id)
call('PEXPIRE', key, fmt(max(latest, leaseMs) + GRACE))
return {1, limit - (n + 1), max(latest, leaseMs), 0, 0, -1, id, expiresAt}
`;

// KEYS[1] = the lease set, ARGV[3] = lease id. 1 when a live lease was removed.
const RELEASE = `
call('ZREMRANGEBYSCORE', KEYS[1], '-inf', fmt(NOW))
return call('ZREM', KEYS[1], ARGV[3])
`;

/** The source of the batch-check script of one algorithm (code 1–6). */
export function checkScriptSource(code: number): string {
  return PRELUDE + (ALGORITHM_LUA[code] ?? '') + BATCH;
}

/** Script sources by name. */
export const SCRIPT_SOURCES = {
  many: PRELUDE + ALL_ALGORITHMS + ALL_BUCKETS + MANY,
  refund: PRELUDE + ALL_ALGORITHMS + ALL_BUCKETS + REFUNDS,
  acquire: PRELUDE + ACQUIRE,
  release: PRELUDE + RELEASE,
} as const;
