-- Escrow: shares and epochs, for the scripts that decide (CHECK) and the one that gives units (MERGE). An
-- item is a table: rkey, bkey, alg, bucket, limit, period, burst, capacity, scale, T, capT, block, cost, init
-- (this region's initial share), ttl, proof, tau. CHECK[alg] (escrow-lua.ts, generated) decides one epoch.
-- The policy of a share: the limit scaled, the burst scaled down, ticks rounded so that the rate is
-- never above the share's (ceil where the Redis store rounds to nearest).
local function ticks(limit, period)
  if limit == 0 then return 1, period end
  local a, b = limit, period
  while b ~= 0 do a, b = b, a % b end
  local s = limit / a
  if s <= 1500 then return s, period * s / limit end
  return 1500, max(1, ceil(period * 1500 / limit))
end
local function scaled(it, share)
  if share == it.limit then
    return { limit = it.limit, period = it.period, capacity = it.capacity, scale = it.scale, T = it.T, capT = it.capT }
  end
  local capacity = share
  if it.bucket then capacity = floor(it.burst * share / it.limit) end
  if share == 0 then capacity = 0 end
  local scale, T = ticks(share, it.period)
  return { limit = share, period = it.period, capacity = capacity, scale = scale, T = T, capT = capacity * T }
end
-- Until when the previous epoch stays binding after a change at `at` (see the top of escrow-lua.ts).
local function horizon(it, at)
  local P = it.period
  if it.alg == 1 then return (floor(at / P) + 1) * P end
  if it.alg == 2 then return (floor(at / P) + 2) * P end
  return at + P
end
-- Where a new epoch is anchored in time: not before the latest stamp this region decided at
-- (admissions made before this change may carry later stamps than this request, and the new epoch
-- does not hold them), nor before a transfer received counts.
local function anchor_of(rec)
  local at = max(NOW, num(rec.hw))
  for _, j in ipairs(PEERS) do at = max(at, num(rec['rt:' .. j]) + SKEW) end
  return at
end
local function epoch_key(it, rec, e) return it.rkey .. '^' .. rec.inc .. '.' .. e end
-- The share now: cached until the next instant a transfer starts to count or a proof runs out.
local function share_now(it, rec)
  if rec.sc and NOW < num(rec.sn) then return num(rec.sc) end
  if not rec.loaded then
    load(rec, tkey(it.rkey))
    rec.loaded = true
  end
  local share = share_of(rec, it.init, it.proof, it.limit)
  local valid = 4503599627370496
  for _, j in ipairs(PEERS) do
    if rec['r:' .. j] then
      local p = num(rec['ra:' .. j]) + it.proof
      if NOW < p then valid = min(valid, p) end
      local t = num(rec['rt:' .. j]) + SKEW
      if NOW < t then valid = min(valid, t) end
    end
  end
  rec.sc, rec.sn = fmt(share), fmt(valid)
  call('HSET', it.rkey, 'sc', rec.sc, 'sn', rec.sn)
  void_fp(it.rkey, rec)
  return share
end
-- The epochs binding now, as {key, policy}: the current one, and the previous one while it binds.
local function epochs(it, newinc)
  local rec = {}
  load(rec, it.rkey)
  -- Time never goes back for a record: callers stamp requests, and a request stamped before one
  -- this region already decided (another application server, a queue) is decided as of that later
  -- instant. The algorithms' single state per key would otherwise read an earlier window as fresh.
  NOW = max(STAMP, num(rec.hw))
  ensure(it.rkey, rec, it.init, newinc)
  local share = share_now(it, rec)
  local e, s = num(rec.e), num(rec.s)
  if share ~= s and not rec.loaded then
    load(rec, tkey(it.rkey))
    rec.loaded = true
  end
  if share > s and not it.bucket then
    -- A growth, in place: the units came unused in the giver's window and count only from their
    -- transfer on (see credit), so the state built so far goes on under the larger share.
    setf(it.rkey, rec, 's', fmt(share))
    if num(rec.pu) > NOW then setf(it.rkey, rec, 'ps', fmt(num(rec.ps) + share - s)) end
  elseif share ~= s then
    e = e + 1
    setf(it.rkey, rec, 'e', fmt(e))
    setf(it.rkey, rec, 's', fmt(share))
    local at = anchor_of(rec)
    if it.bucket then
      -- The new bucket holds, as of the anchor (requests stamped earlier drain nothing from it):
      -- after a growth, what the old one holds plus the tokens the giver took out of its own bucket
      -- with the units (each received unit once: 'tk'); after a give, what the old one holds less the
      -- tokens given; after any other shrink, nothing. Tokens move, never appear: the regions'
      -- buckets together stay within burst + rate x time.
      local p = scaled(it, share)
      local target = 0
      if s > 0 and (share > s or GIVING > 0) then
        local held = CHECK[it.alg](epoch_key(it, rec, e - 1), scaled(it, s), 0, false)[2]
        if share > s then
          local units = min(num(rec.tk), share - s)
          target = held + floor(it.burst * units / it.limit)
          setf(it.rkey, rec, 'tk', fmt(num(rec.tk) - units))
        else
          target = max(0, held - GIVING)
        end
      end
      local take = p.capacity - min(p.capacity, target)
      if take > 0 then
        local now = NOW
        NOW = at
        CHECK[it.alg](epoch_key(it, rec, e), p, take, true)
        NOW = now
      end
    elseif num(rec.pu) > NOW then
      -- An older epoch still binds: keep it (its state holds every admission), with the smallest share.
      setf(it.rkey, rec, 'ps', fmt(min(num(rec.ps), share)))
      setf(it.rkey, rec, 'pu', fmt(max(num(rec.pu), horizon(it, at))))
    else
      setf(it.rkey, rec, 'pe', fmt(e - 1))
      setf(it.rkey, rec, 'ps', fmt(min(s, share)))
      setf(it.rkey, rec, 'pu', fmt(horizon(it, at)))
    end
  end
  local list = { { epoch_key(it, rec, e), scaled(it, share) } }
  if not it.bucket and num(rec.pu) > NOW then
    list[2] = { epoch_key(it, rec, num(rec.pe)), scaled(it, num(rec.ps)) }
  end
  return list, share, rec
end
-- The fast path's copy of the record (fp; see fastPath), written when the next decision may take
-- it: the cached share is valid and is the epoch's share. It holds from the end of the previous
-- epoch's binding (window algorithms) until the cached share's end, and any write to a field it is
-- made of voids it (FP_FIELD).
local function keep_fp(it, rec, share)
  if not rec.sc or num(rec.sc) ~= share or num(rec.s) ~= share then return end
  local from = 0
  if not it.bucket then from = num(rec.pu) end
  local p = scaled(it, share)
  local fp = struct.pack(FP, from, num(rec.sn), share, p.capacity, p.scale, p.T, p.capT) .. rec.inc .. '.' .. fmt(num(rec.e))
  if rec.fp ~= fp then
    rec.fp = fp
    call('HSET', it.rkey, 'fp', fp)
  end
end
-- Decides one item under every binding epoch: allowed only if every epoch allows, and then taken
-- from each. The tightest answer is the one returned.
local function decide(it, list, cost, commit)
  if it.block > 0 then
    local b = call('GET', it.bkey)
    if b and tonumber(b) > NOW then
      local wait = tonumber(b) - NOW
      return {0, 0, wait, wait, 2, -1}
    end
  end
  local d
  if #list == 1 then
    -- One epoch (the usual case): test and take in one step.
    d = CHECK[it.alg](list[1][1], list[1][2], cost, commit)
  else
    local ds, ok = {}, true
    for n, ep in ipairs(list) do
      ds[n] = CHECK[it.alg](ep[1], ep[2], cost, false)
      if ds[n][1] ~= 1 then ok = false end
    end
    if ok and commit and cost > 0 then
      for n, ep in ipairs(list) do ds[n] = CHECK[it.alg](ep[1], ep[2], cost, true) end
    end
    for _, x in ipairs(ds) do
      if d == nil or (d[1] == 1 and x[1] == 0) then
        d = x
      elseif x[1] == d[1] then
        d[2], d[3], d[4] = min(d[2], x[2]), max(d[3], x[3]), max(d[4], x[4])
        if x[6] > d[6] then d[6] = x[6] end
      end
    end
  end
  -- Over this region's share but not over the limit: not 'cost-exceeds-capacity' (the share may grow).
  if d[5] == 1 and cost <= it.capacity then d[5], d[4] = 0, it.period end
  return d
end
-- An item from its policy's 13 numbers: algorithm code, limit, period, burst, capacity, scale, T,
-- capT, blockMs, this region's initial share, record TTL, PROOF (ms), TAU (ms).
local function make_item(rkey, bkey, cost, alg, limit, period, burst, capacity, scale, T, capT, block, init, ttl, proof, tau)
  return { rkey = rkey, bkey = bkey, alg = alg, bucket = alg >= 4, limit = limit, period = period,
    burst = burst, capacity = capacity, scale = scale, T = T, capT = capT, block = block, init = init,
    ttl = ttl, proof = proof, tau = tau, cost = cost }
end
-- Reads an item's ITEM_FIELDS from ARGV at i, as text: the 13 numbers, then the cost (MERGE).
local function item(i, rkey, bkey)
  local n = {}
  for j = 0, 13 do n[j + 1] = tonumber(ARGV[i + j]) end
  return make_item(rkey, bkey, n[14], unpack(n, 1, 13))
end
