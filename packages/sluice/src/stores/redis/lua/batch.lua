-- The batch-check script of one algorithm, after the prelude (lua.ts builds one per algorithm, and one per
-- policy with the policy written in: BAKED). Independent decisions, one after the other — the same as that
-- many separate calls, in one round trip. After ARGV[3], one argument per item: '1' for the usual item
-- (commit, cost 1, the first policy), else 'commit:cost:policy index' (script-args.ts); then the policies,
-- POLICY_WIDTH arguments each (BATCH_POLICY_FIELDS in lua.ts; with BAKED, policy 1 is in the source and
-- ARGV holds policies 2 on). KEYS per item: its state key, then its block key only when its policy blocks.
-- The algorithm's check step is pasted into the loop (CHECK_STEP): no closure and no table per decision.
local n, k, last = 0, 1, #ARGV
if ARGV[3] ~= '0' then last = last - tonumber(ARGV[3]) * POLICY_WIDTH end
-- A lone item's decision is the reply (below); a batch's go into out, sized for one item up front:
-- growing an empty table to six entries takes four resizes.
local out = last ~= 4 and {0, 0, 0, 0, 0, 0}
-- The first policy, read once per call: a batch is mostly one policy.
local L1, P1, C1, S1, T1, CT1, B1
do -- unless BAKED
  local limit, period, capacity, scale, T, capT, blockMs = POLICY_AT(last) -- unless BAKED
  L1, P1, C1, S1, T1, CT1, B1 = limit, period, capacity, scale, T, capT, blockMs -- unless BAKED
end -- unless BAKED
L1, P1, C1, S1, T1, CT1, B1 = BAKED_POLICY -- if BAKED
for i = 4, last do
  local f = ARGV[i]
  local commit, cost, index = true, 1, 1
  if f ~= '1' then
    local x = find(f, ':', 1, true)
    local y = find(f, ':', x + 1, true)
    commit, cost, index = sub(f, 1, x - 1) == '1', tonumber(sub(f, x + 1, y - 1)), tonumber(sub(f, y + 1))
  end
  local limit, period, capacity, scale, T, capT, blockMs = L1, P1, C1, S1, T1, CT1, B1
  if index ~= 1 then
    local b = last + (index - FIRST_ARGV_POLICY) * POLICY_WIDTH
    limit, period, capacity, scale, T, capT, blockMs = POLICY_AT(b)
  end
  local key, bkey = KEYS[k], nil
  if blockMs > 0 then
    bkey = KEYS[k + 1]
    k = k + 2
  else
    k = k + 1
  end
  local ok, remaining, reset, retry, reason, delay = 0, 0, 0, 0, 0, -1
  PASTE('block-check')
  if not blocked then
    repeat
      CHECK_STEP()
    until true
    if reason == 3 then ok = 0 else
      PASTE('block-write')
    end
  end
  -- An allowed decision, the usual one, goes back as one integer when it fits (PACKED_RESET_LIMIT in
  -- lua.ts): remaining * 2^29 + reset, or for the leaky bucket (SHAPING) remaining * 2^29 + reset * 2 + q,
  -- where q says which of two its delay is.
  local packs = ok == 1 and retry == 0 and reason == 0 and delay == -1 and remaining >= 0 and remaining < PACKED_REMAINING_LIMIT and reset >= 0 and remaining % 1 == 0 and reset % 1 == 0 and reset < PACKED_RESET_LIMIT -- unless SHAPING
  local q = -1 -- if SHAPING
  if ok == 1 and reason == 0 then q = reset - delay - floor(((commit and cost > 0) and cost * T or 0) / scale) end -- if SHAPING
  local packs = (q == 0 or q == 1) and remaining >= 0 and remaining < PACKED_REMAINING_LIMIT and reset >= 0 and remaining % 1 == 0 and reset % 1 == 0 and reset < PACKED_SHAPED_RESET_LIMIT -- if SHAPING
  if last == 4 then
    -- A lone decision is the whole reply: one integer when it packs (a table costs Redis more to send).
    if packs and not WERR then return remaining * PACKED_RESET_LIMIT + reset end -- unless SHAPING
    if packs and not WERR then return remaining * PACKED_RESET_LIMIT + reset * 2 + q end -- if SHAPING
    return {-1 - ok, remaining, reset, retry, reason, delay, WERR or nil}
  end
  if packs then
    n = n + 1
    out[n] = remaining * PACKED_RESET_LIMIT + reset -- unless SHAPING
    out[n] = remaining * PACKED_RESET_LIMIT + reset * 2 + q -- if SHAPING
  else
    out[n + 1], out[n + 2], out[n + 3], out[n + 4], out[n + 5], out[n + 6] = -1 - ok, remaining, reset, retry, reason, delay
    n = n + 6
  end
end
if WERR then
  out[n + 1] = WERR
  n = n + 1
end
-- The reply ends at the first nil: the preallocated slots past it are not part of it.
if n < 6 then out[n + 1] = nil end
return out
