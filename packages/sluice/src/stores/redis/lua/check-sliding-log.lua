-- The sliding log's check step (`check` in src/algorithms/sliding-log.ts, line for line): a snippet the
-- scripts paste where they need it (see check-function.lua for what it sees and sets).
-- State: a binary string (LOG_HEADER, then LOG_ENTRY per distinct admission time: lua-macros.ts), oldest
-- entry first. Only admitted requests are logged, one entry per distinct timestamp, so a key holds at most
-- `limit` entries. Expired entries are skipped by moving the head; a small string is rewritten whole (one
-- command), a large one patched in place and compacted once its dead prefix is as long as the live part
-- (O(1) amortised).
local blob = call('GET', key)
local n, count, idx = LOG_HEADER_SIZE, 0, LOG_FIRST_ENTRY
-- A stored log holds at least one entry (an empty one is deleted); the newest is last.
if blob then TIME_FROM_EXPIRY(key, NEWEST_ENTRY_TIME(blob) + period) end
READ_CLOCK()
if blob then
  n = #blob
  PASTE('log-expired')
  count, idx = total - units, i
end
local taken = 0
if cost > capacity then
  ok, remaining, retry, reason = 0, max(0, limit - count), -1, 1
elseif count + cost > limit then
  -- Wait until enough of the oldest entries leave the window.
  local freed, i = 0, idx
  while count - freed + cost > limit do
    local _, u = struct.unpack(LOG_ENTRY, blob, i)
    freed = freed + u
    i = i + LOG_ENTRY_SIZE
  end
  ok, remaining, retry = 0, max(0, limit - count), ENTRY_TIME(blob, i - LOG_ENTRY_SIZE) + period - NOW
else
  ok = 1
  if commit then taken = cost end
  if taken > 0 then
    local after = count + taken
    local lastPos = n - LOG_ENTRY_SPAN
    local merge = lastPos >= idx and ENTRY_TIME(blob, lastPos) == NOW
    if blob == nil or n <= LOG_REWRITE_BYTES or (idx - LOG_FIRST_ENTRY) * 2 >= n - LOG_HEADER_SIZE then
      local live = ''
      if blob then live = sub(blob, idx) end
      if merge then
        local _, u = struct.unpack(LOG_ENTRY, blob, lastPos)
        live = sub(live, 1, #live - LOG_ENTRY_SIZE) .. struct.pack(LOG_ENTRY, NOW, u + taken)
      else
        live = live .. struct.pack(LOG_ENTRY, NOW, taken)
      end
      PUT_AT(key, struct.pack(LOG_HEADER, after, LOG_FIRST_ENTRY) .. live, NOW + period)
    else
      MUST('SETRANGE', key, 0, struct.pack(LOG_HEADER, after, idx))
      if merge then
        -- The units field of the last entry, after its time (SETRANGE counts from 0, lastPos from 1).
        local _, u = struct.unpack(LOG_ENTRY, blob, lastPos)
        MUST('SETRANGE', key, lastPos + LOG_UNITS_OFFSET, struct.pack(LOG_UNITS, u + taken))
      else
        MUST('APPEND', key, struct.pack(LOG_ENTRY, NOW, taken))
      end
      if SERVER then MUST('PEXPIREAT', key, FMT(NOW + period)) else MUST('PEXPIRE', key, FMT(period + GRACE)) end
    end
  end
  remaining = limit - count - taken
end
if taken > 0 then
  reset = period
elseif count > 0 then
  reset = NEWEST_ENTRY_TIME(blob) + period - NOW
end
