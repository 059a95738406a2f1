-- The start of every eventual-mode script: locals, and the G-counter helpers (total, merge_field, mark).
local call, tonumber, byte = redis.call, tonumber, string.byte
local floor, max, min = math.floor, math.max, math.min
local sformat = string.format
local function fmt(x) return ((x) % 1 == 0 and (x) < 9007199254740992 and (x) > -9007199254740992 and sformat('%d', x) or sformat('%.17g', x)) end
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
