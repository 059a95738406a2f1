-- Eventual mode: this region's own fields of some windows, for the sync loop.
-- KEYS: window hashes. ARGV: this region. Returns per key its own two fields and its PTTL, read by
-- the sync loop to send to the other regions.
local out = {}
for i, key in ipairs(KEYS) do
  local v = redis.call('HMGET', key, '+' .. ARGV[1], '-' .. ARGV[1])
  out[#out + 1] = tonumber(v[1] or '0')
  out[#out + 1] = tonumber(v[2] or '0')
  out[#out + 1] = redis.call('PTTL', key)
end
return out
