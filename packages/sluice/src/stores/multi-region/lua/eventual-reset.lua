-- Eventual mode: forgets a key in every region by the next sync, and lifts its block.
-- KEYS: the marker, the block key. ARGV: this region. Subtracts everything this region sees in the
-- newest two windows (in its own '-' field, so the reset reaches every region by the next sync) and
-- lifts the block. Returns the hashes it changed.
local MINUS = '-' .. ARGV[1]
call('DEL', KEYS[2])
local w = call('GET', KEYS[1])
local changed = {}
if not w then return changed end
w = tonumber(w)
for _, window in ipairs({ w, w - 1 }) do
  local key = KEYS[1] .. '@' .. fmt(window)
  local t = total(key)
  if t > 0 then
    call('HINCRBY', key, MINUS, t)
    changed[#changed + 1] = key
  end
end
return changed
