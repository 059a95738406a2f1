-- Several requests, each with several limits, each decided all or nothing — exactly as the memory
-- store's checkMany: look at every limit first, consume only when all allow, and when one (key, policy)
-- appears twice and the second does not fit, give back what the first ones took. The requests are
-- independent (the same as that many separate calls, in one round trip); a script runs alone, so each is
-- atomic. ARGV[3] = policy count, then per request: commit (1/0, or 2: charge), also return the looks (1/0),
-- item count, then per item: cost, policy index; then the policies.
local function many(items, commit)
  local looks, ok = {}, true
  for n, it in ipairs(items) do
    looks[n] = decide(it[1], it[2], it[3], it[4], false)
    if looks[n][1] == 0 then ok = false end
  end
  if not ok then
    if commit then
      for n, it in ipairs(items) do
        if looks[n][1] == 0 and it[3].block > 0 then block(it[2], it[3]) end
      end
    end
    return looks, looks
  end
  if not commit then return looks, looks end
  local taken = {}
  for n, it in ipairs(items) do
    local d = decide(it[1], it[2], it[3], it[4], true)
    taken[n] = d
    if d[1] == 0 then
      for m = 1, n - 1 do REFUND[items[m][3].alg](items[m][1], items[m][3], items[m][4]) end
      -- A refused write leaves the whole request undecided; otherwise the rest keep their looks.
      for m = 1, #items do
        if d[5] == 3 then taken[m] = d elseif m > n then taken[m] = looks[m] end
      end
      break
    end
  end
  return taken, looks
end
-- A charge (Store.charge): every item's cost taken even past its limit (debt), then what a cost-0 look sees.
-- Blocks are neither checked nor written. Per item, charge then look, as the memory store does.
local function charge(items)
  local out = {}
  for n, it in ipairs(items) do
    CHARGE[it[3].alg](it[1], it[3], it[4])
    out[n] = CHECK[it[3].alg](it[1], it[3], 0, false)
  end
  return out, out
end
local ps, nargs = read_policies()
local out, k, i = {}, 1, 4
while i <= nargs do
  local charging, commit, wantLooks, count = ARGV[i] == '2', ARGV[i] == '1', ARGV[i + 1] == '1', tonumber(ARGV[i + 2])
  i = i + 3
  local items = {}
  for n = 1, count do
    items[n] = {KEYS[k], KEYS[k + 1], ps[tonumber(ARGV[i + 1])], tonumber(ARGV[i])}
    i = i + 2
    k = k + 2
  end
  local result, looks
  if charging then result, looks = charge(items) else result, looks = many(items, commit) end
  for _, d in ipairs(result) do for j = 1, 6 do out[#out + 1] = d[j] end end
  if wantLooks then
    for _, d in ipairs(looks) do for j = 1, 6 do out[#out + 1] = d[j] end end
  end
end
if WERR then out[#out + 1] = WERR end
return out
