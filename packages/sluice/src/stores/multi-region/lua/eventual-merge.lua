-- Eventual mode: merges another region's fields (the G-counter merge, idempotent).
-- KEYS per item: the window's hash, its marker. ARGV: the sending region, then per item: its '+',
-- its '-', the TTL it has there (ms), the window. Idempotent: see the top of this file.
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
