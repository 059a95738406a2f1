-- Helpers of the less frequent scripts (several limits, refunds, leases), where clarity beats speed: they
-- come after the prelude, and the check, refund and charge steps fill CHECK, REFUND and CHARGE by algorithm.
local CHECK, REFUND, CHARGE = {}, {}, {}
local function fmt(x) return FMT(x) end
local function nums2(v)
  local i = find(v, ':', 1, true)
  return tonumber(sub(v, 1, i - 1)), tonumber(sub(v, i + 1))
end
local function nums3(v)
  local i = find(v, ':', 1, true)
  local j = find(v, ':', i + 1, true)
  return tonumber(sub(v, 1, i - 1)), tonumber(sub(v, i + 1, j - 1)), tonumber(sub(v, j + 1))
end
-- Writes a state that lives until at (ms on NOW's clock; PUT_AT in lua-macros.ts). Every key gets
-- a TTL; a state that is already as good as a fresh one is deleted instead.
local function put(key, value, at)
  if at + GRACE <= NOW then call('DEL', key)
  elseif not SERVER then call('SET', key, value, 'PX', fmt(at - NOW + GRACE))
  elseif PXAT then call('SET', key, value, 'PXAT', fmt(at))
  else
    call('SET', key, value)
    call('PEXPIREAT', key, fmt(at))
  end
end
-- The policies (ARGV[3] of them, 8 arguments each, at the end), and the index of the last
-- argument before them.
local function read_policies()
  local n = tonumber(ARGV[3])
  local ps, last = {}, #ARGV - n * 8
  for k = 1, n do
    local i = last + (k - 1) * 8
    ps[k] = { alg = tonumber(ARGV[i + 1], 16), limit = tonumber(ARGV[i + 2], 16), period = tonumber(ARGV[i + 3], 16),
      capacity = tonumber(ARGV[i + 4], 16), scale = tonumber(ARGV[i + 5], 16), T = tonumber(ARGV[i + 6], 16),
      capT = tonumber(ARGV[i + 7], 16), block = tonumber(ARGV[i + 8], 16) }
  end
  return ps, last
end
-- One decision as a table {ok, remaining, reset, retry, reason, delay}.
local function decide(key, bkey, p, cost, commit)
  local blockMs = p.block
  local ok, remaining, reset, retry, reason, delay = 0, 0, 0, 0, 0, -1
  PASTE('block-check')
  if blocked then return {ok, remaining, reset, retry, reason, delay} end
  local d = CHECK[p.alg](key, p, cost, commit)
  if d[5] == 3 then return d end
  ok = d[1]
  PASTE('block-write')
  return d
end
local function block(bkey, p)
  WRITE('SET', bkey, fmt(NOW + p.block), 'PX', fmt(p.block + GRACE))
end
