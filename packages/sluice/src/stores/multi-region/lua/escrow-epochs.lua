-- Escrow: the epochs a refund or a reset applies to. KEYS: a lease record, the block key.
-- Returns inc, e, s, pe, ps, pu ('' when there is no record).
local h = redis.call('HMGET', KEYS[1], 'inc', 'e', 's', 'pe', 'ps', 'pu')
for i = 1, 6 do h[i] = h[i] or '' end
return h
