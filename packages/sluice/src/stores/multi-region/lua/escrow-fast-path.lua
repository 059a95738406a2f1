-- Escrow: the check script's fast path, for scripts of one algorithm: the usual decision, on the record's fast-path
-- copy (fp) alone, before the prelude runs (see fastPath in escrow-lua.ts). FOUT and FIRST tell the full path where to go on.
local FOUT, FIRST = {}, 1
if ARGV[2] ~= '1' then
  local sub, find, sformat, floor, ceil, max, min = string.sub, string.find, string.format, math.floor, math.ceil, math.max, math.min
  local call, tonumber, KEYS, ARGV, unpack = redis.call, tonumber, KEYS, ARGV, struct.unpack
  local STAMP, SERVER, COMMIT = tonumber(ARGV[1]), false, ARGV[3] == '1'
  local I0 = 5 + tonumber(ARGV[4])
  local WCALL, WERR, type, PXAT = call, false, type, false
  local k = 1
  local PQ, period, pcapacity, block, ttl, GRACE
  for i = I0, I0 + #KEYS / 2 - 1 do
    local rkey, bkey = KEYS[k], KEYS[k + 1]
    local h = call('HMGET', rkey, 'fp', 'hw')
    if not h[1] then break end
    local hw = 0
    if h[2] then hw = tonumber(h[2]) end
    local NOW = max(STAMP, hw)
    local from, till, share, capacity, scale, T, capT, at = unpack(FP, h[1])
    if NOW < from or NOW >= till then break end
    local q, cost = 5, 1
    if ARGV[i] ~= '1' then
      local x = find(ARGV[i], ':', 1, true)
      q, cost = 4 + tonumber(sub(ARGV[i], 1, x - 1)), tonumber(sub(ARGV[i], x + 1))
    end
    -- The policy's numbers the fast path needs, read once per policy in a call (a batch is mostly one).
    if q ~= PQ then
      PQ = q
      local a, b, c, d, e = string.match(ARGV[q], '^(%x+) (%x+) (%x+) (%x+) (%x+)')
      period, pcapacity, block, ttl, GRACE = tonumber(a, 16), tonumber(b, 16), tonumber(c, 16), tonumber(d, 16), tonumber(e, 16)
    end
    local limit = share
    -- The latest stamp (the full path's write, when it moved).
    if COMMIT and NOW ~= hw then
      call('HSET', rkey, 'hw', ((NOW) % 1 == 0 and (NOW) < 9007199254740992 and (NOW) > -9007199254740992 and sformat('%d', NOW) or sformat('%.17g', NOW)))
    end
    local tick = floor(ttl / 8)
    if not h[2] or floor(hw / tick) ~= floor(NOW / tick) then
      call('PEXPIRE', rkey, ((ttl) % 1 == 0 and (ttl) < 9007199254740992 and (ttl) > -9007199254740992 and sformat('%d', ttl) or sformat('%.17g', ttl)))
      call('PEXPIRE', rkey .. '~', ((ttl) % 1 == 0 and (ttl) < 9007199254740992 and (ttl) > -9007199254740992 and sformat('%d', ttl) or sformat('%.17g', ttl)))
    end
    local ok, remaining, reset, retry, reason, delay = 0, 0, 0, 0, 0, -1
    local b = false
    if block > 0 then b = call('GET', bkey) end
    if b and tonumber(b) > NOW then
      local wait = tonumber(b) - NOW
      remaining, reset, retry, reason = 0, wait, wait, 2
    else
      local key, commit = rkey .. '^' .. sub(h[1], at), COMMIT
      repeat
-- SNIPPET (escrow-lua.ts pastes the algorithm's check snippet here)
      until true
      if reason == 1 and cost <= pcapacity then reason, retry = 0, period end
      if ok ~= 1 and COMMIT and block > 0 then
        call('SET', bkey, ((NOW + block) % 1 == 0 and (NOW + block) < 9007199254740992 and (NOW + block) > -9007199254740992 and sformat('%d', NOW + block) or sformat('%.17g', NOW + block)), 'PX', ((block + GRACE) % 1 == 0 and (block + GRACE) < 9007199254740992 and (block + GRACE) > -9007199254740992 and sformat('%d', block + GRACE) or sformat('%.17g', block + GRACE)))
      end
    end
    local n = #FOUT
    FOUT[n + 1], FOUT[n + 2], FOUT[n + 3], FOUT[n + 4] = ok, remaining, reset, retry
    FOUT[n + 5], FOUT[n + 6], FOUT[n + 7], FOUT[n + 8] = reason, delay, share, NOW
    FIRST, k = FIRST + 1, k + 2
  end
  if FIRST > #KEYS / 2 then return FOUT end
end
