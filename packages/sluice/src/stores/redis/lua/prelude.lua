-- The start of every Redis store script (lua.ts): locals for the globals the scripts use, the time (NOW),
-- the grace added to TTLs, and how writes that decide are made (WCALL, WERR).
local sub, find, sformat, floor, ceil, max, min = string.sub, string.find, string.format, math.floor, math.ceil, math.max, math.min
-- Globals are table lookups on every use: keep the ones the hot loop touches in locals.
local call, tonumber, type, KEYS, ARGV = redis.call, tonumber, type, KEYS, ARGV
-- NOW: the time in ms. The server clock (Redis's) makes every application server agree, whatever
-- its own clock says. In the batch scripts (LAZY_CLOCK) NOW stays nil under the server clock until a
-- step needs it: a stored key tells the time from its own expiry (PTTL; TIME_FROM_EXPIRY in
-- lua-macros.ts), and TIME with the parsing of its reply was a ninth to a sixth of a lone decision's
-- cost in Redis. Code that may run first under a lazy NOW reads it with READ_CLOCK().
local NOW, SERVER
if ARGV[1] == '' then
  READ_CLOCK() -- unless LAZY_CLOCK
  SERVER = true
else
  NOW = tonumber(ARGV[1])
  SERVER = false
end
local GRACE = 0
if ARGV[2] ~= '0' then GRACE = tonumber(ARGV[2]) end
-- Whether SET takes PXAT (Redis 6.2): REDIS_VERSION_NUM came with Redis 7.0.
local PXAT = redis.REDIS_VERSION_NUM ~= nil
-- Writes that decide go through WCALL (the WRITE and MUST macros); WERR keeps the first refused write's
-- message, returned after the decisions.
local WCALL, WERR = redis.pcall, false
