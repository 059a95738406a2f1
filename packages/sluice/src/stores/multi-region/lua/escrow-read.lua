-- Escrow: READ, the sync's view of lease records. KEYS: lease records. ARGV: the head (escrowHead: the time,
-- grace, this region, the peer count, the peers), then per record the demand this process counted since its
-- last read (its decayed sum, the instant of that sum, TAU; 0 0 0 for none), added to the record's own (both
-- decayed to the later instant: the sum of decayed sums is the decayed sum of all).
-- Returns per record: inc (or '' when gone), share, the decayed demand sum and its instant, then per peer:
-- units given, the incarnation of that peer they were given to, the instant of the last transfer, and the
-- units received from that peer (the largest total it reported).
local call, tonumber, exp, max, sformat = redis.call, tonumber, math.exp, math.max, string.format
local npeers = tonumber(ARGV[4])
local A = 5 + npeers
local GIVEN = {}
for i = 1, npeers do
  local j = ARGV[4 + i]
  GIVEN[4 * i - 3], GIVEN[4 * i - 2], GIVEN[4 * i - 1], GIVEN[4 * i] = 'g:' .. j, 'gi:' .. j, 'gt:' .. j, 'r:' .. j
end
local out, o = {}, 0
for n, rkey in ipairs(KEYS) do
  local h = call('HMGET', rkey, 'inc', 's', 'dr', 'dt')
  if not h[1] then
    o = o + 1
    out[o] = ''
  else
    local a = A + 3 * (n - 1)
    local add, dr, dt = tonumber(ARGV[a]), h[3] or '0', h[4] or '0'
    if add > 0 then
      local at, tau, old, since = tonumber(ARGV[a + 1]), tonumber(ARGV[a + 2]), tonumber(dr), tonumber(dt)
      local t = max(at, since)
      local sum = add * exp((at - t) / tau)
      if old > 0 then sum = sum + old * exp((since - t) / tau) end
      dr, dt = ((sum) % 1 == 0 and (sum) < 9007199254740992 and (sum) > -9007199254740992 and sformat('%d', sum) or sformat('%.17g', sum)), ((t) % 1 == 0 and (t) < 9007199254740992 and (t) > -9007199254740992 and sformat('%d', t) or sformat('%.17g', t))
      call('HSET', rkey, 'dr', dr, 'dt', dt)
    end
    out[o + 1], out[o + 2], out[o + 3], out[o + 4] = h[1], tonumber(h[2] or '0'), dr, dt
    o = o + 4
    -- The transfer hash (see the top of escrow-lua.ts): what this region gave each peer, and received.
    local g = call('HMGET', rkey .. '~', unpack(GIVEN))
    for i = 1, 4 * npeers, 4 do
      out[o + 1], out[o + 2], out[o + 3] = tonumber(g[i] or '0'), g[i + 1] or '', tonumber(g[i + 2] or '0')
      out[o + 4] = tonumber(g[i + 3] or '0')
      o = o + 4
    end
  end
end
return out
