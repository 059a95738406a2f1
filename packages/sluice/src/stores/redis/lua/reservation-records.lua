-- Reservation records beside the counters: a reservation's key and cost, kept in Redis until
-- it is settled or claimed after its expiry, so one that a dead process never settled is still handled.
-- Atomic: a record is taken once, by a settle or by one sweeping process, never both.
-- KEYS: the expiry index (sorted set), the records (hash). ARGV[1]: the operation.
--   add id expiresAt record -> 1
--   take id                 -> the record, or false when it is gone (settled, or claimed as expired)
--   expired now max         -> { id, record, ... } of at most max records past their expiry, removed
local op = ARGV[1]
if op == 'add' then
  redis.call('ZADD', KEYS[1], ARGV[3], ARGV[2])
  redis.call('HSET', KEYS[2], ARGV[2], ARGV[4])
  return 1
end
if op == 'take' then
  local rec = redis.call('HGET', KEYS[2], ARGV[2])
  if not rec then return false end
  redis.call('HDEL', KEYS[2], ARGV[2])
  redis.call('ZREM', KEYS[1], ARGV[2])
  return rec
end
local ids = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[2], 'LIMIT', 0, tonumber(ARGV[3]))
local out = {}
for _, id in ipairs(ids) do
  local rec = redis.call('HGET', KEYS[2], id)
  redis.call('HDEL', KEYS[2], id)
  redis.call('ZREM', KEYS[1], id)
  if rec then
    out[#out + 1] = id
    out[#out + 1] = rec
  end
end
return out
