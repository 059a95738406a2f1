-- Eventual mode: gives back a cost in this region's own '-' field.
-- KEYS: the window's hash. ARGV: this region, cost. Gives back at most what the window holds.
local t = total(KEYS[1])
local give = min(tonumber(ARGV[2]), t)
if give > 0 then call('HINCRBY', KEYS[1], '-' .. ARGV[1], give) end
return give
