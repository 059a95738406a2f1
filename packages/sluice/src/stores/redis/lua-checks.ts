/**
 * The check step of each algorithm as a Lua *snippet*: straight-line code, a line-for-line port of
 * `check` in src/algorithms/*.ts, that the scripts paste where they need it — inline in the batch
 * loop (the hot path: no closure and no table per decision, which is most of a script's cost in
 * Redis), or wrapped in a function for the multi-limit script.
 *
 * A snippet runs inside `repeat … until true` (so `break` ends it) and sees these locals:
 *   in:  key, limit, period, capacity, scale, T (intervalTicks), capT (capacityTicks), cost, commit,
 *        NOW, SERVER, GRACE, and sub, find, sformat, floor, ceil, max, min, call
 *   out: ok (1/0), remaining, reset, retry (-1 = never), reason (0, 1 = cost-exceeds-capacity),
 *        delay (-1 = none); they start as 0, 0, 0, 0, 0, -1.
 * It writes the key only when the request is allowed, `commit` is set and cost > 0, through `W` (see
 * the PRELUDE in lua.ts): when Redis refuses the write, the snippet sets reason 3 and ends, and the
 * item is left undecided for the caller's failure policy.
 */

/**
 * Lua text formatting a number exactly: integers (counts, windows, milliseconds, ticks: nearly every
 * number written) by '%d', which prints them as '%.17g' does at a fraction of its cost in Redis's Lua
 * (≈ 60 against 350 ns, and a decision writes two to four), anything else by '%.17g'. `expr` is
 * evaluated up to three times: callers pass plain arithmetic.
 */
export const fmt = (expr: string) =>
  `((${expr}) % 1 == 0 and (${expr}) < 9007199254740992 and (${expr}) > -9007199254740992 and sformat('%d', ${expr}) or sformat('%.17g', ${expr}))`;

/** Lua text running a write that must succeed for the decision to stand (else: reason 3, end). */
const must = (args: string) => `if not W(${args}) then reason = 3 break end`;

/** Lua text writing `value` with a TTL of `ttl` ms plus the grace; a state already fresh is deleted. */
export const put = (key: string, value: string, ttl: string) =>
  `do local ttl = (${ttl}) + GRACE if ttl > 0 then ${must(`'SET', ${key}, ${value}, 'PX', ${fmt('ttl')}`)} else W('DEL', ${key}) end end`;

// State: with the client clock "window:count". With the server clock just the count, as an integer
// (Redis shares small integers, so the value costs nothing), and the window is the key's expiry:
// PEXPIREAT the window's last millisecond. Redis hides a key once its (frozen) script time is past
// that, so a visible key belongs to the current window, and its PTTL + 1 is the time to the window's
// end: the batch script then reads no TIME at all (NOW is nil until needed; prelude() in lua.ts).
const FIXED_WINDOW = `
local v = call('GET', key)
local count, toEnd, window = 0, nil, nil
if v and SERVER then count = tonumber(v) end
if v and not NOW then
  local left = call('PTTL', key)
  if left >= 0 then toEnd = left + 1 end
end
if not toEnd then
  NOW = NOW or TIME()
  window = floor(NOW / period)
  toEnd = (window + 1) * period - NOW
  if v and not SERVER then
    local i = find(v, ':', 1, true)
    if tonumber(sub(v, 1, i - 1)) == window then count = tonumber(sub(v, i + 1)) end
  end
end
if cost > capacity then
  ok, remaining, retry, reason = 0, max(0, limit - count), -1, 1
  if count > 0 then reset = toEnd end
  break
end
if count + cost > limit then
  -- In the next window the count starts at 0 and cost <= limit, so it fits there.
  ok, remaining, reset, retry = 0, limit - count, toEnd, toEnd
  break
end
local taken = 0
if commit then taken = cost end
if taken > 0 then
  if SERVER then
    -- A key that exists was created in this window with its expiry (the write below), and INCRBY
    -- keeps it: only a new key needs one.
    if v then ${must("'INCRBY', key, taken")} else
      ${must("'SET', key, taken")}
      ${must(`'PEXPIREAT', key, ${fmt('(window + 1) * period - 1')}`)}
    end
  else
    ${put('key', `${fmt('window')} .. ':' .. ${fmt('count + taken')}`, 'toEnd')}
  end
end
ok, remaining = 1, limit - count - taken
if count + taken > 0 then reset = toEnd end
`;

// State: "window:previous count:current count". Compared multiplied by the period, in integers:
// allowed iff prev * (period - elapsed) + (curr + cost) * period <= limit * period.
const SLIDING_WINDOW = `
local window = floor(NOW / period)
local elapsed = NOW - window * period
local prev, curr = 0, 0
local v = call('GET', key)
if v then
  local i = find(v, ':', 1, true)
  local j = find(v, ':', i + 1, true)
  local w = tonumber(sub(v, 1, i - 1))
  if w == window then
    prev, curr = tonumber(sub(v, i + 1, j - 1)), tonumber(sub(v, j + 1))
  elseif w == window - 1 then
    prev = tonumber(sub(v, j + 1))
  end
end
local taken = 0
if cost > capacity then
  ok, retry, reason = 0, -1, 1
elseif prev * (period - elapsed) + (curr + cost) * period > limit * period then
  -- The first instant the same request fits: later in this window as the previous window's weight
  -- fades, else in the next window (where today's count becomes the previous one), else two on.
  ok, retry = 0, nil
  local roomNow = (limit - curr - cost) * period
  if roomNow >= 0 and prev > 0 then
    local at = period - floor(roomNow / prev)
    if at < period then retry = at - elapsed end
  end
  if retry == nil then
    if curr == 0 then
      retry = period - elapsed
    else
      local atNext = max(0, period - floor((limit - cost) * period / curr))
      if atNext < period then retry = period - elapsed + atNext else retry = 2 * period - elapsed end
    end
  end
else
  ok = 1
  if commit then taken = cost end
  if taken > 0 then
    ${put('key', `${fmt('window')} .. ':' .. ${fmt('prev')} .. ':' .. ${fmt('curr + taken')}`, '(window + 2) * period - NOW')}
  end
end
curr = curr + taken
remaining = max(0, floor((limit * period - prev * (period - elapsed)) / period) - curr)
if curr > 0 then reset = 2 * period - elapsed elseif prev > 0 then reset = period - elapsed end
`;

// State: a binary string — a 16-byte header (total units of the live entries, byte position of the
// first live entry) and (timestamp, units) pairs of doubles, oldest first. Only admitted requests are
// logged, one pair per distinct timestamp, so a key holds at most `limit` pairs. Expired pairs are
// skipped by moving the head; a small string is rewritten whole (one command), a large one patched in
// place and compacted once its dead prefix is as long as the live part (O(1) amortised).
const SLIDING_LOG = `
local blob = call('GET', key)
local n, count, idx = 16, 0, 17
if blob then
  n = #blob
  local total, head = struct.unpack('<dd', blob)
  local oldest = NOW - period
  local units, i = 0, head
  while i < n do
    local ts, u = struct.unpack('<dd', blob, i)
    if ts > oldest then break end
    units = units + u
    i = i + 16
  end
  count, idx = total - units, i
end
local taken = 0
if cost > capacity then
  ok, remaining, retry, reason = 0, max(0, limit - count), -1, 1
elseif count + cost > limit then
  -- Wait until enough of the oldest entries leave the window.
  local freed, i = 0, idx
  while count - freed + cost > limit do
    local _, u = struct.unpack('<dd', blob, i)
    freed = freed + u
    i = i + 16
  end
  ok, remaining, retry = 0, limit - count, struct.unpack('<d', blob, i - 16) + period - NOW
else
  ok = 1
  if commit then taken = cost end
  if taken > 0 then
    local after = count + taken
    local lastPos = n - 15
    local merge = lastPos >= idx and struct.unpack('<d', blob, lastPos) == NOW
    if blob == nil or n <= 528 or (idx - 17) * 2 >= n - 16 then
      local live = ''
      if blob then live = sub(blob, idx) end
      if merge then
        local _, u = struct.unpack('<dd', blob, lastPos)
        live = sub(live, 1, #live - 16) .. struct.pack('<dd', NOW, u + taken)
      else
        live = live .. struct.pack('<dd', NOW, taken)
      end
      ${put('key', "struct.pack('<dd', after, 17) .. live", 'period')}
    else
      ${must("'SETRANGE', key, 0, struct.pack('<dd', after, idx)")}
      if merge then
        local _, u = struct.unpack('<dd', blob, lastPos)
        ${must("'SETRANGE', key, lastPos + 7, struct.pack('<d', u + taken)")}
      else
        ${must("'APPEND', key, struct.pack('<dd', NOW, taken)")}
      end
      ${must(`'PEXPIRE', key, ${fmt('period + GRACE')}`)}
    end
  end
  remaining = limit - count - taken
end
if taken > 0 then
  reset = period
elseif count > 0 then
  reset = struct.unpack('<d', blob, n - 15) + period - NOW
end
`;

// State: "level in ticks:last update ms" (src/algorithms/bucket.ts). The level drains at `scale`
// ticks per ms; a request adds cost × T ticks; a clock that went back drains nothing.
const bucket = (shaping: boolean) => `
local v = call('GET', key)
local stored, last = 0, 0
if v then
  local i = find(v, ':', 1, true)
  stored, last = tonumber(sub(v, 1, i - 1)), tonumber(sub(v, i + 1))
end
local level = max(0, stored - max(0, NOW - last) * scale)
local held = level
if cost > capacity then
  ok, retry, reason = 0, -1, 1
else
  local after = level + cost * T
  if after > capT then
    ok, retry = 0, ceil((after - capT) / scale)
  else
    ok = 1
    if commit and cost > 0 then
      held = after
      last = max(NOW, last)
      ${put('key', `${fmt('after')} .. ':' .. ${fmt('last')}`, 'last + ceil(after / scale) - NOW')}
    end
    ${shaping ? '-- What is already queued drains first: this request goes when it has.\n    delay = ceil(level / scale)' : ''}
  end
end
remaining = floor((capT - held) / T)
reset = ceil(held / scale)
`;

// State: the theoretical arrival time in ticks (src/algorithms/gcra.ts). A request of cost c conforms
// iff max(TAT, now) + c·T − now <= capT; then TAT becomes that sum.
const GCRA = `
local v = call('GET', key)
local stored = 0
if v then stored = tonumber(v) end
local nowT = NOW * scale
local tat = max(stored, nowT)
local held = tat - nowT
if cost > capacity then
  ok, retry, reason = 0, -1, 1
else
  local newTat = tat + cost * T
  if newTat - nowT > capT then
    ok, retry = 0, ceil((newTat - nowT - capT) / scale)
  else
    ok = 1
    if commit and cost > 0 then
      held = newTat - nowT
      ${put('key', fmt('newTat'), 'ceil(newTat / scale) - NOW')}
    end
  end
end
remaining = floor((capT - held) / T)
reset = ceil(held / scale)
`;

/** Check snippets by algorithm code (see ALGORITHM_CODES in lua.ts). */
export const CHECK_SNIPPETS: Readonly<Record<number, string>> = {
  1: FIXED_WINDOW,
  2: SLIDING_WINDOW,
  3: SLIDING_LOG,
  4: bucket(false),
  5: bucket(true),
  6: GCRA,
};
