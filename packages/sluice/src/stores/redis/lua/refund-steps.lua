-- The refund step of each algorithm (`refund` in src/algorithms/*.ts), as REFUND[algorithm code], after
-- helpers.lua: gives back what a request took at `at` (ms on NOW's clock; nil: NOW), only to the window that
-- counted it.
REFUND[1] = function(key, p, cost, at)
  local P = p.period
  local window = floor(NOW / P)
  -- Units taken in an earlier window were counted there: the current window never held them.
  if floor(min(at or NOW, NOW) / P) ~= window then return end
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
REFUND[2] = function(key, p, cost, at)
  local P = p.period
  local window = floor(NOW / P)
  local taken = floor(min(at or NOW, NOW) / P)
  -- Back to the window that counted the units (this one or the previous); an older one weighs nothing now.
  if taken < window - 1 then return end
  local v = call('GET', key)
  if not v then return end
  local w, a, b = nums3(v)
  if taken == w then b = max(0, b - cost)
  elseif taken == window - 1 and w == window then a = max(0, a - cost)
  else return end
  put(key, fmt(w) .. ':' .. fmt(a) .. ':' .. fmt(b), (w + 2) * P)
end
-- The sliding log's layout: LOG_HEADER, LOG_ENTRY in lua-macros.ts.
local function sl_load(key, period)
  local blob = call('GET', key)
  if not blob then return nil, LOG_HEADER_SIZE, 0, LOG_FIRST_ENTRY end
  local n = #blob
  PASTE('log-expired')
  return blob, n, total - units, i
end
REFUND[3] = function(key, p, cost, at)
  local P = p.period
  local blob, n, count, idx = sl_load(key, P)
  if not blob then return end
  at = at or NOW
  -- Entries logged after `at` are other requests', admitted since: they stay (`after`). Give back the newest
  -- units at or before it: the caller's own.
  local stop = n
  while stop >= idx + LOG_ENTRY_SPAN and struct.unpack(LOG_ENTRY, blob, stop - LOG_ENTRY_SPAN) > at do
    stop = stop - LOG_ENTRY_SIZE
  end
  local after = sub(blob, stop + 1, n)
  local left, total, tail = cost, count, ''
  while left > 0 and stop >= idx + LOG_ENTRY_SPAN do
    local ts, u = struct.unpack(LOG_ENTRY, blob, stop - LOG_ENTRY_SPAN)
    local back = min(u, left)
    left = left - back
    total = total - back
    stop = stop - LOG_ENTRY_SIZE
    if back < u then tail = struct.pack(LOG_ENTRY, ts, u - back) end
  end
  local live = sub(blob, idx, stop) .. tail .. after
  if #live == 0 then
    call('DEL', key)
    return
  end
  put(key, struct.pack(LOG_HEADER, total, LOG_FIRST_ENTRY) .. live, NEWEST_ENTRY_TIME(live) + P)
end
-- GCRA and both buckets keep the theoretical arrival time (check-gcra.lua).
local function tat_refund(key, p, cost)
  local v = call('GET', key)
  if not v then return end
  local nowT = NOW * p.scale
  local s = max(nowT, max(tonumber(v), nowT) - cost * p.T)
  put(key, fmt(s), ceil(s / p.scale))
end
REFUND[4], REFUND[5], REFUND[6] = tat_refund, tat_refund, tat_refund
