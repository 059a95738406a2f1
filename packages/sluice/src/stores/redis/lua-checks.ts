/**
 * The check step of each algorithm as a Lua *snippet*: straight-line code, a line-for-line port of
 * `check` in src/algorithms/*.ts, that the scripts paste where they need it — inline in the batch
 * loop (the hot path: no closure and no table per decision, which is most of a script's cost in
 * Redis), or wrapped in a function for the multi-limit script.
 *
 * A snippet runs inside `repeat … until true` (so `break` ends it) and sees these locals:
 *   in:  key, limit, period, capacity, scale, T (intervalTicks), capT (capacityTicks), cost, commit,
 *        NOW (nil under the server clock until something reads it: READ_CLOCK), SERVER, GRACE, PXAT,
 *        WCALL, WERR, and sub, find, sformat, floor, ceil, max, min, call, tonumber, type
 *   out: ok (1/0), remaining, reset, retry (-1 = never), reason (0, 1 = cost-exceeds-capacity),
 *        delay (-1 = none); they start as 0, 0, 0, 0, 0, -1.
 * It writes the key only when the request is allowed, `commit` is set and cost > 0, through WCALL (see
 * the PRELUDE in lua.ts): when Redis refuses the write, the snippet sets reason 3 and ends, and the
 * item is left undecided for the caller's failure policy.
 *
 * Under the server clock every state key expires at an instant its value determines (putAt): the
 * bucket's drain, the window's end, the arrival time, the newest log entry plus the period. A snippet
 * that finds a stored key while NOW is still unset takes the time from that key's PTTL
 * (timeFromExpiry) instead of TIME: one PTTL costs Redis a fraction of what TIME and parsing its
 * two-string reply do (10,400 instructions of a lone token-bucket decision's 91,000).
 */

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
export const write = (args: string, onRefusal = '') =>
  `do local r = WCALL(${args}) if type(r) == 'table' and r.err then WERR = WERR or r.err ${onRefusal} end end`;

/** Lua text running a write that must succeed for the decision to stand (else: reason 3, end). */
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
 * then, so that its PTTL tells the time later (timeFromExpiry) — a relative expiry would start from
 * Redis's clock a few microseconds later, and each write could add a millisecond; under the callers'
 * clock for `at - NOW` ms plus the grace. A state already as good as a fresh one (at <= NOW) is
 * deleted. `SET … PXAT` needs Redis 6.2 and the scripts run on Redis 5, so PXAT (see the PRELUDE)
 * says whether to use it; the fallback, SET then PEXPIREAT, is one more command and, oddly, 16 more
 * bytes per key for a string value on Redis 7.0.
 */
export const putAt = (key: string, value: string, at: string) =>
  `do local at = ${at} if at + GRACE > NOW then local value = ${value} if not SERVER then ${must(`'SET', ${key}, value, 'PX', ${fmt('at - NOW + GRACE')}`)} elseif PXAT then ${must(`'SET', ${key}, value, 'PXAT', ${fmt('at')}`)} else ${must(`'SET', ${key}, value`)} ${must(`'PEXPIREAT', ${key}, ${fmt('at')}`)} end else ${write(`'DEL', ${key}`)} end end`;

/** Lua text reading Redis's clock into NOW unless it is already set (the server clock; see prelude() in lua.ts). */
export const READ_CLOCK = `if not NOW then local t = call('TIME') NOW = tonumber(t[1]) * 1000 + floor(tonumber(t[2]) / 1000) end`;

/**
 * Lua text setting NOW from a stored key that expires at `expiry` (putAt set it so), when
 * NOW is not set yet: NOW = expiry − PTTL. A key without a TTL (not written by sluice) leaves it unset.
 */
const timeFromExpiry = (key: string, expiry: string) =>
  `if not NOW then local left = call('PTTL', ${key}) if left >= 0 then NOW = ${expiry} - left end end`;

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
  ${READ_CLOCK}
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
  ok, remaining, reset, retry = 0, max(0, limit - count), toEnd, toEnd
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
    ${putAt('key', joined('window', 'count + taken'), '(window + 1) * period')}
  end
end
ok, remaining = 1, limit - count - taken
if count + taken > 0 then reset = toEnd end
`;

// State: "window:previous count:current count". Compared multiplied by the period, in integers:
// allowed iff prev * (period - elapsed) + (curr + cost) * period <= limit * period.
const SLIDING_WINDOW = `
local v = call('GET', key)
local w, c1, c2
if v then
  c1 = find(v, ':', 1, true)
  c2 = find(v, ':', c1 + 1, true)
  w = tonumber(sub(v, 1, c1 - 1))
  ${timeFromExpiry('key', '(w + 2) * period')}
end
${READ_CLOCK}
local window = floor(NOW / period)
local elapsed = NOW - window * period
local prev, curr = 0, 0
if v then
  if w == window then
    prev, curr = tonumber(sub(v, c1 + 1, c2 - 1)), tonumber(sub(v, c2 + 1))
  elseif w == window - 1 then
    prev = tonumber(sub(v, c2 + 1))
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
    ${putAt('key', joined('window', 'prev', 'curr + taken'), '(window + 2) * period')}
  end
end
curr = curr + taken
remaining = max(0, floor((limit * period - prev * (period - elapsed)) / period) - curr)
if curr > 0 then reset = 2 * period - elapsed elseif prev > 0 then reset = period - elapsed end
`;

/**
 * The sliding log's binary layout in Redis (struct formats): a header of the live entries' total units
 * and the byte position of the first live entry, then one entry per distinct admission time — its
 * time in ms (signed 48 bits: ±4,000 years) and its units (16 bits: an entry holds at most the
 * policy's limit, and MAX_SLIDING_LOG_LIMIT is below 2^16). 8 bytes an entry, half of two doubles.
 */
export const LOG_HEADER = '<I4I4';
/** An entry's two fields alone (a same-millisecond admission patches the units in place). */
const LOG_TIME = '<i6';
const LOG_UNITS = '<I2';
export const LOG_ENTRY = `${LOG_TIME}${LOG_UNITS.slice(1)}`;
/** Sizes in bytes of the header, of an entry's time and of a whole entry. */
export const LOG_HEADER_SIZE = 8;
const LOG_TIME_SIZE = 6;
export const LOG_ENTRY_SIZE = 8;
/** Up to this many entries a log is rewritten whole (one command); a longer one is patched in place. */
const LOG_REWRITE_ENTRIES = 32;

const H = LOG_HEADER_SIZE;
const E = LOG_ENTRY_SIZE;
/** Lua text: the time of the entry at byte position `pos` (1-based) of `blob`. */
const entryTime = (blob: string, pos: string) => `struct.unpack('${LOG_TIME}', ${blob}, ${pos})`;
/** Lua text: the time of the newest (last) entry of a log `blob` that holds at least one. */
export const newestEntryTime = (blob: string) => entryTime(blob, `#${blob} - ${E - 1}`);

// State: the binary string above, oldest entry first. Only admitted requests are logged, one entry
// per distinct timestamp, so a key holds at most `limit` entries. Expired entries are skipped by
// moving the head; a small string is rewritten whole (one command), a large one patched in place and
// compacted once its dead prefix is as long as the live part (O(1) amortised).
const SLIDING_LOG = `
local blob = call('GET', key)
local n, count, idx = ${H}, 0, ${H + 1}
-- A stored log holds at least one entry (an empty one is deleted); the newest is last.
if blob then ${timeFromExpiry('key', `${newestEntryTime('blob')} + period`)} end
${READ_CLOCK}
if blob then
  n = #blob
  local total, head = struct.unpack('${LOG_HEADER}', blob)
  local oldest = NOW - period
  local units, i = 0, head
  while i < n do
    local ts, u = struct.unpack('${LOG_ENTRY}', blob, i)
    if ts > oldest then break end
    units = units + u
    i = i + ${E}
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
    local _, u = struct.unpack('${LOG_ENTRY}', blob, i)
    freed = freed + u
    i = i + ${E}
  end
  ok, remaining, retry = 0, max(0, limit - count), ${entryTime('blob', `i - ${E}`)} + period - NOW
else
  ok = 1
  if commit then taken = cost end
  if taken > 0 then
    local after = count + taken
    local lastPos = n - ${E - 1}
    local merge = lastPos >= idx and ${entryTime('blob', 'lastPos')} == NOW
    if blob == nil or n <= ${H + LOG_REWRITE_ENTRIES * E} or (idx - ${H + 1}) * 2 >= n - ${H} then
      local live = ''
      if blob then live = sub(blob, idx) end
      if merge then
        local _, u = struct.unpack('${LOG_ENTRY}', blob, lastPos)
        live = sub(live, 1, #live - ${E}) .. struct.pack('${LOG_ENTRY}', NOW, u + taken)
      else
        live = live .. struct.pack('${LOG_ENTRY}', NOW, taken)
      end
      ${putAt('key', `struct.pack('${LOG_HEADER}', after, ${H + 1}) .. live`, 'NOW + period')}
    else
      ${must(`'SETRANGE', key, 0, struct.pack('${LOG_HEADER}', after, idx)`)}
      if merge then
        -- The units field of the last entry, after its time (SETRANGE counts from 0, lastPos from 1).
        local _, u = struct.unpack('${LOG_ENTRY}', blob, lastPos)
        ${must(`'SETRANGE', key, lastPos + ${LOG_TIME_SIZE - 1}, struct.pack('${LOG_UNITS}', u + taken)`)}
      else
        ${must(`'APPEND', key, struct.pack('${LOG_ENTRY}', NOW, taken)`)}
      end
      if SERVER then ${must(`'PEXPIREAT', key, ${fmt('NOW + period')}`)} else ${must(`'PEXPIRE', key, ${fmt('period + GRACE')}`)} end
    end
  end
  remaining = limit - count - taken
end
if taken > 0 then
  reset = period
elseif count > 0 then
  reset = ${newestEntryTime('blob')} + period - NOW
end
`;

// State: the theoretical arrival time in ticks (src/algorithms/gcra.ts), for GCRA and both buckets.
// A request of cost c conforms iff max(TAT, now) + c·T − now <= capT; then TAT becomes that sum.
// max(TAT, now) − now is the bucket's level (src/algorithms/bucket.ts: its spent tokens, or its queue),
// so the three decide alike from one number: a value Redis keeps as an integer (no string, 32 bytes
// less per key than "level:last") and reads with one tonumber. Where the memory store's buckets keep
// the level and the time of the last update, a clock that goes back shows here as time not yet
// drained (the bucket looks fuller by that time, never emptier).
const gcra = (shaping: boolean) => `
local v = call('GET', key)
local stored = 0
if v then
  stored = tonumber(v)
  ${timeFromExpiry('key', 'ceil(stored / scale)')}
end
${READ_CLOCK}
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
    ${shaping ? '-- What is already queued drains first: this request goes when it has.\n    delay = ceil(held / scale)' : ''}
    if commit and cost > 0 then
      held = newTat - nowT
      ${putAt('key', fmt('newTat'), 'ceil(newTat / scale)')}
    end
  end
end
-- Never below 0: a bucket in debt (a charge, Store.charge) holds more than its capacity.
remaining = max(0, floor((capT - held) / T))
reset = ceil(held / scale)
`;

/** Check snippets by algorithm code (see ALGORITHM_CODES in lua.ts). */
export const CHECK_SNIPPETS: Readonly<Record<number, string>> = {
  1: FIXED_WINDOW,
  2: SLIDING_WINDOW,
  3: SLIDING_LOG,
  4: gcra(false),
  5: gcra(true),
  6: gcra(false),
};
