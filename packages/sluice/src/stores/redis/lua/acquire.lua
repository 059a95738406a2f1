-- Takes a concurrency lease: a sorted set of lease ids scored by expiry.
-- KEYS[1] = the lease set (member = lease id, score = expiry). ARGV[3] = limit, ARGV[4] = leaseMs,
-- ARGV[5] = the new lease's id. Returns the 6 decision integers, then the lease id and expiry.
local key = KEYS[1]
local limit, leaseMs, id = tonumber(ARGV[3]), tonumber(ARGV[4]), ARGV[5]
call('ZREMRANGEBYSCORE', key, '-inf', fmt(NOW))
local n = call('ZCARD', key)
local soonest, latest = 0, NOW
if n > 0 then
  soonest = tonumber(call('ZRANGE', key, 0, 0, 'WITHSCORES')[2]) - NOW
  latest = max(NOW, tonumber(call('ZRANGE', key, -1, -1, 'WITHSCORES')[2]))
end
latest = latest - NOW
if n >= limit then
  if limit == 0 then return {0, 0, latest, -1, 1, -1, '', 0} end
  return {0, 0, latest, soonest, 0, -1, '', 0}
end
local expiresAt = NOW + leaseMs
call('ZADD', key, fmt(expiresAt), id)
call('PEXPIRE', key, fmt(max(latest, leaseMs) + GRACE))
return {1, limit - (n + 1), max(latest, leaseMs), 0, 0, -1, id, expiresAt}
