-- Escrow: forgets the algorithm state of every epoch and the block. KEYS: a lease record, the block key.
-- The share (what was given and received) stays, since other regions count on it.
local h = redis.call('HMGET', KEYS[1], 'inc', 'e', 'pe')
redis.call('DEL', KEYS[2])
if not h[1] then return 0 end
redis.call('DEL', KEYS[1] .. '^' .. h[1] .. '.' .. h[2])
if h[3] then redis.call('DEL', KEYS[1] .. '^' .. h[1] .. '.' .. h[3]) end
return 1
