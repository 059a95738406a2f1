-- The check step of GCRA and both buckets (`check` in src/algorithms/gcra.ts and bucket.ts): a snippet the
-- scripts paste where they need it (see check-function.lua for what it sees and sets); the leaky bucket's
-- (SHAPING) also sets the delay.
-- State: the theoretical arrival time in ticks (src/algorithms/gcra.ts), for GCRA and both buckets.
-- A request of cost c conforms iff max(TAT, now) + c·T − now <= capT; then TAT becomes that sum.
-- max(TAT, now) − now is the bucket's level (src/algorithms/bucket.ts: its spent tokens, or its queue),
-- so the three decide alike from one number: a value Redis keeps as an integer (no string, 32 bytes
-- less per key than "level:last") and reads with one tonumber. Where the memory store's buckets keep
-- the level and the time of the last update, a clock that goes back shows here as time not yet
-- drained (the bucket looks fuller by that time, never emptier).
local v = call('GET', key)
local stored = 0
if v then
  stored = tonumber(v)
  TIME_FROM_EXPIRY(key, ceil(stored / scale))
end
READ_CLOCK()
local nowT = NOW * scale
local tat = max(stored, nowT)
local held = tat - nowT
if cost > capacity then
  ok, retry, reason = 0, -1, 1
else
  local newTat = tat + cost * T
  if newTat - nowT > capT then
    ok, retry = 0, ceil((newTat - nowT - capT) / scale)
  else
    ok = 1
    -- What is already queued drains first: this request goes when it has. -- if SHAPING
    delay = ceil(held / scale) -- if SHAPING
    if commit and cost > 0 then
      held = newTat - nowT
      PUT_AT(key, FMT(newTat), ceil(newTat / scale))
    end
  end
end
-- Never below 0: a bucket in debt (a charge, Store.charge) holds more than its capacity.
remaining = max(0, floor((capT - held) / T))
reset = ceil(held / scale)
