-- Escrow: what every escrow script but READ starts with (after escrow-lua.ts's generated head, which sets
-- HEAD_AT and FP): the locals, the record's two hashes, shares from transfers, demand. See the top of escrow-lua.ts.
local sub, find, sformat, floor, ceil, max, min = string.sub, string.find, string.format, math.floor, math.ceil, math.max, math.min
local call, tonumber, KEYS, ARGV = redis.call, tonumber, KEYS, ARGV
local function words(s)
  local t = {}
  for w in string.gmatch(s, '%S+') do t[#t + 1] = w end
  return t
end
-- The head (grace, this region, the peers): ARGV from ARGV[2] on, or the words of ARGV[HEAD_AT] (the
-- check script's tail: one argument, a constant string per store) when the script sets HEAD_AT.
local HEAD, H = ARGV, 2
if HEAD_AT then HEAD, H = words(ARGV[HEAD_AT]), 1 end
local NOW, GRACE, ME = tonumber(ARGV[1]), tonumber(HEAD[H]), HEAD[H + 1]
local STAMP = NOW
local SKEW = 0
local SERVER = false
local PEERS = {}
local npeers = tonumber(HEAD[H + 2])
for i = 1, npeers do PEERS[i] = HEAD[H + 2 + i] end
local A = H + 3 + npeers
local function fmt(x) return ((x) % 1 == 0 and (x) < 9007199254740992 and (x) > -9007199254740992 and sformat('%d', x) or sformat('%.17g', x)) end
-- The check snippets write through WCALL (the single-region store's refusal-aware write). Here it is
-- redis.call: a refused write fails the whole script, as every other write of these scripts does.
local WCALL, WERR, type, PXAT = call, false, type, false
local function num(v) if v then return tonumber(v) end return 0 end
-- Fields named with a ':' (per peer: transfers, what the peers reported) live in the record's
-- transfer hash, rkey .. '~', which only the sync writes; a decision reads the small record, with its
-- cached share (sc, valid until sn), and the transfer hash only when that share may have changed.
local function tkey(rkey) return rkey .. '~' end
local function load(rec, key)
  local h = call('HGETALL', key)
  for i = 1, #h, 2 do rec[h[i]] = h[i + 1] end
end
-- Both hashes (the sync's scripts).
local function record(rkey)
  local rec = {}
  load(rec, rkey)
  load(rec, tkey(rkey))
  rec.loaded = true
  return rec
end
-- The fields the share is computed from (share_of, share_now): a change to one voids the cached share.
local SHARE_FIELD = { ['g'] = true, ['r'] = true, ['rt'] = true, ['r0'] = true }
-- The fields the fast path's copy (fp, see keep_fp) is made of: a change to one voids it.
local FP_FIELD = { ['inc'] = true, ['e'] = true, ['s'] = true, ['sc'] = true, ['sn'] = true, ['pu'] = true }
local function void_fp(rkey, rec)
  if rec.fp then
    rec.fp = nil
    call('HDEL', rkey, 'fp')
  end
end
local function void_share(rkey, rec)
  if rec.sn and rec.sn ~= '0' then
    rec.sn = '0'
    call('HSET', rkey, 'sn', '0')
    void_fp(rkey, rec)
  end
end
-- Writes a field, when it changes (a sync mostly repeats what the record holds: no write, and the
-- cached share stays valid for the decisions that follow).
local function setf(rkey, rec, field, value)
  if rec[field] == value then return end
  rec[field] = value
  local c = find(field, ':', 1, true)
  if c then
    call('HSET', tkey(rkey), field, value)
    if SHARE_FIELD[sub(field, 1, c - 1)] then void_share(rkey, rec) end
  else
    call('HSET', rkey, field, value)
    if FP_FIELD[field] then void_fp(rkey, rec) end
  end
end
-- Creates the record when missing: a new incarnation, holding the region's initial share.
local function ensure(rkey, rec, init, inc)
  if rec.inc then return end
  setf(rkey, rec, 'inc', inc)
  setf(rkey, rec, 'e', '1')
  setf(rkey, rec, 's', fmt(init))
end
-- Units received from region j that count for a decision stamped NOW.
local function received(rec, j, proof)
  if not rec['r:' .. j] or NOW >= num(rec['ra:' .. j]) + proof then return 0 end
  if NOW >= num(rec['rt:' .. j]) + SKEW then return num(rec['r:' .. j]) end
  return num(rec['r0:' .. j])
end
-- The share this region holds now (see the top of escrow-lua.ts), never more than the limit: honest
-- regions' shares sum to at most the limit, so no honest history gets here past it, while a peer whose
-- record lies (or is corrupted) about what it gave would otherwise make this region admit without
-- bound (100,000 units claimed, 580 of 580 admitted against 10 an hour). With the cap, a lying peer
-- can at most bring this region up to the whole limit (docs/multi-region.md, what "never over" assumes).
local function share_of(rec, init, proof, limit)
  local s = init
  for _, j in ipairs(PEERS) do s = s - num(rec['g:' .. j]) + received(rec, j, proof) end
  return min(limit, max(0, s))
end
-- Learns that region j holds its record under incarnation inc (a sync either way proves it).
local function observe(rkey, rec, j, inc, at, proof)
  if rec['ri:' .. j] ~= inc then
    -- First contact, or j's record was created anew: whatever the old one gave is void.
    setf(rkey, rec, 'r:' .. j, '0')
    setf(rkey, rec, 'r0:' .. j, '0')
    setf(rkey, rec, 'ri:' .. j, inc)
  end
  if rec['gi:' .. j] ~= inc then
    -- What this region gave an earlier incarnation of j died with it (it outlived every admission
    -- made with it: records live four horizons): take it back.
    setf(rkey, rec, 'g:' .. j, '0')
    setf(rkey, rec, 'gi:' .. j, inc)
  end
  local ra = num(rec['ra:' .. j])
  if at > ra then
    -- A later proof changes the share only if the cached one was computed after the old proof ran
    -- out (then it is valid past it, see share_now); otherwise, until the cache's end, units from j
    -- counted and still do.
    if num(rec.sn) > ra + proof then void_share(rkey, rec) end
    setf(rkey, rec, 'ra:' .. j, fmt(at))
  end
end
-- Credits the running total of units region j reports having given this incarnation, by max: a
-- duplicate or a replay changes nothing. A transfer counts from its instant (plus the clocks'
-- disagreement) on; until then, what was received before it does.
local function credit(rkey, rec, j, units, to, at)
  -- A total that is not a whole number of units (garbage, NaN, inf, negative: a broken or hostile
  -- peer) is not credited: stored, it would void every later comparison with it.
  if not units or units ~= units or units < 0 or units >= 2 ^ 53 or units ~= floor(units) then return end
  if not at or at ~= at or at < 0 or at >= 2 ^ 53 then return end
  if to ~= rec.inc or units <= num(rec['r:' .. j]) then return end
  -- The previous total counts for every later decision once this region decided past its instant.
  if num(rec.hw) >= num(rec['rt:' .. j]) + SKEW then setf(rkey, rec, 'r0:' .. j, rec['r:' .. j] or '0') end
  -- Newly received units, not yet in a bucket: a bucket growth turns them into tokens, once.
  setf(rkey, rec, 'tk', fmt(num(rec.tk) + units - num(rec['r:' .. j])))
  setf(rkey, rec, 'r:' .. j, fmt(units))
  if at > num(rec['rt:' .. j]) then setf(rkey, rec, 'rt:' .. j, fmt(at)) end
end
-- Units asked per period, from the decayed sum (a steady rate q per ms makes it q * TAU).
local function demand_of(rec, tau, period)
  local d = num(rec.dr)
  if d <= 0 then return 0 end
  return d * math.exp(-max(0, NOW - num(rec.dt)) / tau) * period / tau
end
-- The algorithms' checks, CHECK[code](key, policy table, cost, commit) -> decision table: escrow-lua.ts writes
-- them in after this prelude, only those of the script's algorithms (every function a script defines is built
-- again on every call).
local CHECK = {}
-- Tokens leaving this region's bucket with the units MERGE gives away (0 outside a give).
local GIVING = 0
