-- Escrow: the check script's full path, from item FIRST on (see checkScript in escrow-lua.ts): each item decided
-- under every binding epoch of its record, all or nothing when ALL; returns FOUT with 8 fields per item appended.
local ALL, COMMIT, NEWINC = ARGV[2] == '1', ARGV[3] == '1', ARGV[#ARGV]
SKEW = tonumber(HEAD[A])
local I0 = 5 + tonumber(ARGV[4])
-- A policy's text (see POLICY_HEAD) as make_item's 13 numbers.
local function policy_of(text)
  local n, i = {}, 1
  for w in string.gmatch(text, '%x+') do n[i], i = tonumber(w, 16), i + 1 end
  return n[6], n[7], n[1], n[8], n[2], n[9], n[10], n[11], n[3], n[12], n[4], n[13], n[14]
end
local items, k = {}, 2 * FIRST - 1
for i = I0 + FIRST - 1, I0 + #KEYS / 2 - 1 do
  local index, cost = 1, 1
  if ARGV[i] ~= '1' then
    local x = find(ARGV[i], ':', 1, true)
    index, cost = tonumber(sub(ARGV[i], 1, x - 1)), tonumber(sub(ARGV[i], x + 1))
  end
  items[#items + 1] = make_item(KEYS[k], KEYS[k + 1], cost, policy_of(ARGV[4 + index]))
  k = k + 2
end
local function block(it)
  if it.block > 0 then call('SET', it.bkey, fmt(NOW + it.block), 'PX', fmt(it.block + GRACE)) end
end
local lists, shares, looks, fits, ats = {}, {}, {}, true, {}
for n, it in ipairs(items) do
  local rec
  lists[n], shares[n], rec = epochs(it, NEWINC)
  ats[n] = NOW
  -- The latest stamp (demand is the process's to count: see dr at the top of escrow-lua.ts).
  if COMMIT and num(rec.hw) ~= NOW then call('HSET', it.rkey, 'hw', fmt(NOW)) end
  keep_fp(it, rec, shares[n])
  -- The record lives its TTL from its last use, renewed once per eighth of it (not on every call).
  local tick = floor(it.ttl / 8)
  if not rec.hw or floor(num(rec.hw) / tick) ~= floor(NOW / tick) then
    call('PEXPIRE', it.rkey, fmt(it.ttl))
    call('PEXPIRE', tkey(it.rkey), fmt(it.ttl))
  end
  looks[n] = decide(it, lists[n], it.cost, COMMIT and not ALL)
  if looks[n][1] ~= 1 then
    fits = false
    if COMMIT and not ALL and looks[n][5] ~= 2 then block(it) end
  end
end
if ALL and COMMIT then
  if fits then
    -- The caller merges items of the same (key, policy), so each one still fits when its turn comes.
    for n, it in ipairs(items) do
      NOW = ats[n]
      looks[n] = decide(it, lists[n], it.cost, true)
    end
  else
    for n, it in ipairs(items) do
      NOW = ats[n]
      if looks[n][1] == 0 and looks[n][5] ~= 2 then block(it) end
    end
  end
end
local out = FOUT
for n, d in ipairs(looks) do
  for j = 1, 6 do out[#out + 1] = d[j] end
  out[#out + 1] = shares[n]
  out[#out + 1] = ats[n]
end
return out
