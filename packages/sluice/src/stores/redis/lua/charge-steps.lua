-- The charge step of each algorithm (`charge` in src/algorithms/*.ts; Store.charge), as
-- CHARGE[algorithm code], after helpers.lua and refund-steps.lua (nums2, nums3, put, sl_load): the cost
-- taken even past the limit, as debt of at most MAX_DEBT (algorithms/debt.ts). Writes through call(): a
-- refused write fails the script, and the limiter's failure policy answers the settle.
CHARGE[1] = function(key, p, cost)
  local P = p.period
  local window = floor(NOW / P)
  local v = call('GET', key)
  local count = 0
  if SERVER then
    -- A visible key belongs to this window (see check-fixed-window.lua).
    if v then count = tonumber(v) end
    call('SET', key, fmt(min(count + cost, p.limit + MAX_DEBT)))
    call('PEXPIREAT', key, fmt((window + 1) * P - 1))
  else
    if v then
      local w, c = nums2(v)
      if w == window then count = c end
    end
    put(key, fmt(window) .. ':' .. fmt(min(count + cost, p.limit + MAX_DEBT)), (window + 1) * P)
  end
end
CHARGE[2] = function(key, p, cost)
  local P = p.period
  local window = floor(NOW / P)
  local v = call('GET', key)
  local prev, curr = 0, 0
  if v then
    local w, a, b = nums3(v)
    if w == window then prev, curr = a, b elseif w == window - 1 then prev = b end
  end
  put(key, fmt(window) .. ':' .. fmt(prev) .. ':' .. fmt(min(curr + cost, p.limit + floor(MAX_DEBT / P))), (window + 2) * P)
end
CHARGE[3] = function(key, p, cost)
  local P = p.period
  local blob, n, count, idx = sl_load(key, P)
  local taken = min(cost, max(0, 2 * p.limit - count))
  if taken <= 0 then return end
  local live = ''
  if blob then live = sub(blob, idx) end
  local lastPos = #live - LOG_ENTRY_SPAN
  if lastPos >= 1 and struct.unpack(LOG_ENTRY, live, lastPos) == NOW then
    local _, u = struct.unpack(LOG_ENTRY, live, lastPos)
    live = sub(live, 1, lastPos - 1) .. struct.pack(LOG_ENTRY, NOW, u + taken)
  else
    live = live .. struct.pack(LOG_ENTRY, NOW, taken)
  end
  put(key, struct.pack(LOG_HEADER, count + taken, LOG_FIRST_ENTRY) .. live, NOW + P)
end
local function tat_charge(key, p, cost)
  local v = call('GET', key)
  local nowT = NOW * p.scale
  local held = 0
  if v then held = max(tonumber(v), nowT) - nowT end
  local s = nowT + min(held + cost * p.T, p.capT + MAX_DEBT)
  put(key, fmt(s), ceil(s / p.scale))
end
CHARGE[4], CHARGE[5], CHARGE[6] = tat_charge, tat_charge, tat_charge
