-- Escrow: MERGE, one region's records as another region sends them (see MERGE_SCRIPT's comment in escrow-lua.ts):
-- records the sender, credits what it gave, gives it what it asks for as far as this region can spare.
local NEWINC = ARGV[A]
SKEW = tonumber(ARGV[A + 1])
local out, k = {}, 1
for i = A + 2, #ARGV, ITEM_FIELDS + MERGE_FIELDS do
  local it = item(i, KEYS[k], '')
  it.block = 0
  k = k + 1
  local m = i + ITEM_FIELDS
  local from, finc, units, to, at = ME, ARGV[m], tonumber(ARGV[m + 1]), ARGV[m + 2], tonumber(ARGV[m + 3])
  local want, asked = tonumber(ARGV[m + 6]), tonumber(ARGV[m + 7])
  STAMP = tonumber(ARGV[m + 8])
  NOW = STAMP
  local rkey = it.rkey
  local rec = record(rkey)
  ensure(rkey, rec, it.init, NEWINC)
  observe(rkey, rec, from, finc, NOW, it.proof)
  credit(rkey, rec, from, units, to, at)
  local share = num(rec.s)
  if want > 0 and asked > num(rec['ak:' .. from]) then
    -- Asked for units: the share and epochs as a decision here would see them now.
    local list
    list, share, rec = epochs(it, NEWINC)
    -- epochs() reads the transfer hash only when the cached share no longer holds: the running
    -- totals below need it whatever the cache says.
    if not rec.loaded then
      load(rec, tkey(rkey))
      rec.loaded = true
    end
    setf(rkey, rec, 'ak:' .. from, fmt(asked))
    -- What this region can spare: beyond its own demand, and (window algorithms) still unused in
    -- its window — the state of every binding epoch, looked at with cost 0.
    local spare = share - min(share, ceil(demand_of(rec, it.tau, it.period) * DEMAND_HEADROOM))
    if not it.bucket then spare = min(spare, decide(it, list, 0, false)[2]) end
    -- A bucket gives units only with tokens it holds, which leave with them (epochs, GIVING).
    local held = 0
    if it.bucket then
      held = decide(it, list, 0, false)[2]
      spare = min(spare, floor(held * it.limit / max(1, it.burst)))
    end
    local give = floor(min(want, spare))
    if it.bucket then
      while give > 0 and ceil(it.burst * give / it.limit) > held do give = give - 1 end
    end
    if give > 0 then
      setf(rkey, rec, 'g:' .. from, fmt(num(rec['g:' .. from]) + give))
      setf(rkey, rec, 'gt:' .. from, fmt(NOW))
      -- Later decisions here are stamped from the transfer on, so the shrink binds them all.
      if NOW > num(rec.hw) then setf(rkey, rec, 'hw', fmt(NOW)) end
      share = share - give
      if it.bucket then
        -- The bucket shrinks now, with the tokens given, measured at this instant.
        GIVING = ceil(it.burst * give / it.limit)
        list, share, rec = epochs(it, NEWINC)
        GIVING = 0
        if not rec.loaded then
          load(rec, tkey(rkey))
          rec.loaded = true
        end
      end
    end
  end
  call('PEXPIRE', rkey, fmt(it.ttl))
  call('PEXPIRE', tkey(rkey), fmt(it.ttl))
  out[#out + 1] = rec.inc
  out[#out + 1] = num(rec['g:' .. from])
  out[#out + 1] = rec['gi:' .. from] or ''
  out[#out + 1] = num(rec['gt:' .. from])
  out[#out + 1] = share
  out[#out + 1] = demand_of(rec, it.tau, it.period)
end
return out
