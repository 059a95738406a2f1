-- Ends a concurrency lease.
-- KEYS[1] = the lease set, ARGV[3] = lease id. 1 when a live lease was removed.
call('ZREMRANGEBYSCORE', KEYS[1], '-inf', fmt(NOW))
return call('ZREM', KEYS[1], ARGV[3])
