-- Eventual mode: decides items against this region's view of each window, adding to its own field.
-- ARGV: now, grace, this region, all-or-nothing (1/0), commit (1/0), then per item 6 fields: the
-- algorithm (1 fixed, 2 sliding), then in hexadecimal (redis/hex.ts) limit, period, capacity, blockMs
-- and cost. KEYS per item: the window's hash, the previous window's hash, the marker, the block key.
-- Returns per item: status (1 fits, 0 does not, 2 blocked), previous total, current total (before
-- this item took anything), block end (or 0).
local NOW, GRACE, ME, ALL, COMMIT = tonumber(ARGV[1]), tonumber(ARGV[2]), ARGV[3], ARGV[4] == '1', ARGV[5] == '1'
local PLUS = '+' .. ME
local items, k = {}, 1
for i = 6, #ARGV, 6 do
  items[#items + 1] = { cur = KEYS[k], prev = KEYS[k + 1], marker = KEYS[k + 2], bkey = KEYS[k + 3],
    alg = tonumber(ARGV[i]), limit = tonumber(ARGV[i + 1], 16), period = tonumber(ARGV[i + 2], 16),
    capacity = tonumber(ARGV[i + 3], 16), block = tonumber(ARGV[i + 4], 16), cost = tonumber(ARGV[i + 5], 16) }
  k = k + 4
end
local function look(it)
  if it.block > 0 then
    local b = call('GET', it.bkey)
    if b and tonumber(b) > NOW then return 2, 0, 0, tonumber(b) end
  end
  local curr = total(it.cur)
  local prev = 0
  if it.alg == 2 then prev = total(it.prev) end
  if it.cost > it.capacity then return 0, prev, curr, 0 end
  local P = it.period
  if it.alg == 1 then
    if curr + it.cost > it.limit then return 0, prev, curr, 0 end
  else
    local elapsed = NOW - floor(NOW / P) * P
    if prev * (P - elapsed) + (curr + it.cost) * P > it.limit * P then return 0, prev, curr, 0 end
  end
  return 1, prev, curr, 0
end
local function take(it)
  if it.cost <= 0 then return end
  local P = it.period
  local w = floor(NOW / P)
  -- Long enough for the window to count (the sliding window also weighs the previous one), plus the
  -- grace that lets late syncs from other regions still find it.
  local ttl = (w + it.alg) * P - NOW + GRACE
  -- The TTL and the marker name the window's end, the same instant at every take: set them at this
  -- region's first take in the window (its field was new), not at every decision.
  if call('HINCRBY', it.cur, PLUS, it.cost) == it.cost then
    call('PEXPIRE', it.cur, fmt(ttl))
    mark(it.marker, w, ttl)
  end
end
local function block(it)
  if it.block > 0 then call('SET', it.bkey, fmt(NOW + it.block), 'PX', fmt(it.block + GRACE)) end
end
local out, fits = {}, true
local looks = {}
for n, it in ipairs(items) do
  local s, p, c, b = look(it)
  looks[n] = { s, p, c, b }
  if s ~= 1 then fits = false end
  if not ALL and COMMIT then
    if s == 1 then take(it) elseif s == 0 then block(it) end
  end
end
if ALL and COMMIT then
  if fits then
    -- Take in order, re-checking: one (key, policy) twice must fit twice. If it does not, undo what
    -- this script took — no other client saw it, so the counter stays a G-counter.
    for n, it in ipairs(items) do
      local s, p, c, b = look(it)
      if s ~= 1 then
        looks[n] = { s, p, c, b }
        for m = 1, n - 1 do
          if items[m].cost > 0 then call('HINCRBY', items[m].cur, PLUS, -items[m].cost) end
        end
        break
      end
      take(it)
    end
  else
    for n, it in ipairs(items) do if looks[n][1] == 0 then block(it) end end
  end
end
for _, l in ipairs(looks) do for j = 1, 4 do out[#out + 1] = l[j] end end
return out
