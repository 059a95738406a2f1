-- The sliding window's check step (`check` in src/algorithms/sliding-window.ts, line for line): a snippet
-- the scripts paste where they need it (see check-function.lua for what it sees and sets).
-- State: "window:previous count:current count". Compared multiplied by the period, in integers:
-- allowed iff prev * (period - elapsed) + (curr + cost) * period <= limit * period.
local v = call('GET', key)
local w, c1, c2
if v then
  c1 = find(v, ':', 1, true)
  c2 = find(v, ':', c1 + 1, true)
  w = tonumber(sub(v, 1, c1 - 1))
  TIME_FROM_EXPIRY(key, (w + 2) * period)
end
READ_CLOCK()
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
    PUT_AT(key, JOINED(window, prev, curr + taken), (window + 2) * period)
  end
end
curr = curr + taken
remaining = max(0, floor((limit * period - prev * (period - elapsed)) / period) - curr)
if curr > 0 then reset = 2 * period - elapsed elseif prev > 0 then reset = period - elapsed end
