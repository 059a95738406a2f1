-- The fixed window's check step (`check` in src/algorithms/fixed-window.ts, line for line): a snippet the
-- scripts paste where they need it (see check-function.lua for what it sees and sets).
-- State: with the client clock "window:count". With the server clock just the count, as an integer
-- (Redis shares small integers, so the value costs nothing), and the window is the key's expiry:
-- PEXPIREAT the window's last millisecond. Redis hides a key once its (frozen) script time is past
-- that, so a visible key belongs to the current window, and its PTTL + 1 is the time to the window's
-- end: the batch script then reads no TIME at all (NOW is nil until needed; see prelude.lua).
local v = call('GET', key)
local count, toEnd, window = 0, nil, nil
if v and SERVER then count = tonumber(v) end
if v and not NOW then
  local left = call('PTTL', key)
  if left >= 0 then toEnd = left + 1 end
end
if not toEnd then
  READ_CLOCK()
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
    if v then MUST('INCRBY', key, taken) else
      MUST('SET', key, taken)
      MUST('PEXPIREAT', key, FMT((window + 1) * period - 1))
    end
  else
    PUT_AT(key, JOINED(window, count + taken), (window + 1) * period)
  end
end
ok, remaining = 1, limit - count - taken
if count + taken > 0 then reset = toEnd end
