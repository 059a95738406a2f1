/**
 * The Lua of `'escrow'` mode. Each region owns a *share* of the global limit and decides, alone and in
 * one round trip, with the algorithm's own step (the Redis store's snippets) scaled to that share.
 * Shares sum to at most the limit, so whatever every region admits together stays within it.
 *
 * A region's share is a bounded counter (Balegas et al., "Extending Eventually Consistent Cloud
 * Databases for Enforcing Numeric Invariants", SRDS 2015): its initial part, plus units other
 * regions gave it, minus units it gave away. In its lease record (a hash):
 *   inc            its incarnation (a new one whenever the record is created)
 *   g:<j>, gi:<j>  units given to region j, and the incarnation of j they were given to
 *   r:<j>, ri:<j>  units received from j (the largest total j reported), and j's incarnation
 *   ra:<j>         when j was last known to hold its record (a sync either way); units from j count
 *                  only within PROOF ms of it, so a peer that lost its record (expired while cut off)
 *                  cannot leave them counted twice
 *   e, s           the current epoch and its share; pe, ps, pu the previous epoch, still binding
 *   hw             the latest time stamp a decision here carried (requests are stamped by callers)
 *   q:<w>          units asked in window w (the demand the rebalancer reads)
 *   os:<j>, od:<j> region j's share and demand, as last reported
 * Only the region itself writes g:*, and it merges r:* by max, so sync messages may be duplicated,
 * reordered or replayed.
 *
 * When the share changes, the region starts a new *epoch* (a fresh state key), because the
 * algorithm's state was built under the old share:
 *  - window algorithms (fixed window, sliding window, sliding log): the previous epoch, whose state
 *    holds every admission, stays binding with the smaller of the two shares for one horizon (until
 *    the window ends; the next one too for the sliding window; one period for the log). A shrink
 *    binds at once, a growth only once the admissions made under the old shares have aged out;
 *  - bucket algorithms (token and leaky bucket, GCRA): the new epoch starts empty. A region's
 *    admissions over any interval are then at most its bucket at the start plus its refill since,
 *    and summed over regions that is within burst + rate × time.
 * A region gives units away only out of its own share, before telling anyone, so the receiver's
 * growth always comes after the giver's shrink.
 */
import { createHash } from 'node:crypto';
import { CHECK_SNIPPETS } from '../redis/lua-checks.js';
import type { Script } from '../redis/scripts.js';

function script(name: string, source: string): Script {
  return { name, source, sha: createHash('sha1').update(source).digest('hex') };
}

/** ARGV common to every escrow script: now, grace, this region, the peers (count, then names). */
const PRELUDE = `
local sub, find, sformat, floor, ceil, max, min = string.sub, string.find, string.format, math.floor, math.ceil, math.max, math.min
local call, tonumber, KEYS, ARGV = redis.call, tonumber, KEYS, ARGV
local NOW, GRACE, ME = tonumber(ARGV[1]), tonumber(ARGV[2]), ARGV[3]
local SERVER = false
local PEERS = {}
local npeers = tonumber(ARGV[4])
for i = 1, npeers do PEERS[i] = ARGV[4 + i] end
local A = 5 + npeers
local function fmt(x) return sformat('%.17g', x) end
-- The check snippets write through W (the single-region store's refusal-aware write). Here a refused
-- write fails the whole script, as every other write of these scripts does.
local function W(...) call(...) return true end
local function num(v) if v then return tonumber(v) end return 0 end
local function record(rkey)
  local h = call('HGETALL', rkey)
  local rec = {}
  for i = 1, #h, 2 do rec[h[i]] = h[i + 1] end
  return rec
end
local function setf(rkey, rec, field, value)
  rec[field] = value
  call('HSET', rkey, field, value)
end
-- Creates the record when missing: a new incarnation, holding the region's initial share.
local function ensure(rkey, rec, init, inc)
  if rec.inc then return end
  setf(rkey, rec, 'inc', inc)
  setf(rkey, rec, 'e', '1')
  setf(rkey, rec, 's', fmt(init))
end
-- The share this region holds now (see the top of escrow-lua.ts).
local function share_of(rec, init, proof)
  local s = init
  for _, j in ipairs(PEERS) do
    s = s - num(rec['g:' .. j])
    if rec['r:' .. j] and NOW < num(rec['ra:' .. j]) + proof then s = s + num(rec['r:' .. j]) end
  end
  return max(0, s)
end
-- Learns that region j holds its record under incarnation inc (a sync either way proves it).
local function observe(rkey, rec, j, inc, at)
  if rec['ri:' .. j] ~= inc then
    -- First contact, or j's record was created anew: whatever the old one gave is void.
    setf(rkey, rec, 'r:' .. j, '0')
    setf(rkey, rec, 'ri:' .. j, inc)
  end
  if rec['gi:' .. j] ~= inc then
    -- What this region gave an earlier incarnation of j died with it (it outlived every admission
    -- made with it: records live four horizons): take it back.
    setf(rkey, rec, 'g:' .. j, '0')
    setf(rkey, rec, 'gi:' .. j, inc)
  end
  if at > num(rec['ra:' .. j]) then setf(rkey, rec, 'ra:' .. j, fmt(at)) end
end
`;

/** The check snippets as functions of (key, policy table, cost, commit) → decision table. */
const CHECKS = Object.entries(CHECK_SNIPPETS)
  .map(
    ([code, snippet]) => `
CHECK[${code}] = function(key, p, cost, commit)
  local limit, period, capacity, scale, T, capT = p.limit, p.period, p.capacity, p.scale, p.T, p.capT
  local ok, remaining, reset, retry, reason, delay = 0, 0, 0, 0, 0, -1
  repeat
${snippet}
  until true
  return {ok, remaining, reset, retry, reason, delay}
end`,
  )
  .join('\n');

// ARGV after the prelude: all-or-nothing (1/0), commit (1/0), new incarnation, the clocks' largest
// disagreement (ms), then per item 13 fields: algorithm code, limit, period, burst, capacity, scale, T, capT, blockMs, cost, this
// region's initial share, record TTL, PROOF (ms). KEYS per item: the lease record, the block key.
// Returns per item the 6 decision integers (see the Redis store's lua.ts), the share, and the instant
// it was decided at.
const CHECK_SCRIPT = `${PRELUDE}
local CHECK = {}
${CHECKS}
local ALL, COMMIT, NEWINC, SKEW = ARGV[A] == '1', ARGV[A + 1] == '1', ARGV[A + 2], tonumber(ARGV[A + 3])
local STAMP = NOW
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
-- Until when the previous epoch stays binding after a change at \`at\` (see the top of the file).
local function horizon(it, at)
  local P = it.period
  if it.alg == 1 then return (floor(at / P) + 1) * P end
  if it.alg == 2 then return (floor(at / P) + 2) * P end
  return at + P
end
-- Where a change is anchored in time: now, or — when units arrived — the instant they were given
-- plus the clocks' disagreement, whichever is later. The giver's admissions under its old share
-- were all stamped before it gave, but requests here may carry earlier stamps than that (they were
-- stamped before they queued), so a growth must count from the gift, not from this request.
local function anchor_of(rec)
  -- Nor from before the latest stamp this region has decided at: admissions made before this
  -- change may carry later stamps than this request, and the new epoch does not hold them.
  local at = max(NOW, num(rec.hw))
  for _, j in ipairs(PEERS) do at = max(at, num(rec['rt:' .. j]) + SKEW) end
  return at
end
local function epoch_key(it, rec, e) return it.rkey .. '^' .. rec.inc .. '.' .. e end
-- The epochs binding now, as {key, policy}: the current one, and the previous one while it binds.
local function epochs(it)
  local rec = record(it.rkey)
  -- Time never goes back for a record: callers stamp requests, and a request stamped before one
  -- this region already decided (another application server, a queue) is decided as of that later
  -- instant. The algorithms' single state per key would otherwise read an earlier window as fresh.
  NOW = max(STAMP, num(rec.hw))
  ensure(it.rkey, rec, it.init, NEWINC)
  local share = share_of(rec, it.init, it.proof)
  local e, s = num(rec.e), num(rec.s)
  if share ~= s then
    e = e + 1
    setf(it.rkey, rec, 'e', fmt(e))
    setf(it.rkey, rec, 's', fmt(share))
    local at = anchor_of(rec)
    if it.bucket then
      -- Start empty, as of the anchor: take the whole new bucket at that instant (requests stamped
      -- earlier drain nothing from it).
      local p = scaled(it, share)
      if p.capacity > 0 then
        local now = NOW
        NOW = at
        CHECK[it.alg](epoch_key(it, rec, e), p, p.capacity, true)
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
local items, k = {}, 1
local i = A + 4
while i <= #ARGV do
  local alg = tonumber(ARGV[i])
  items[#items + 1] = { rkey = KEYS[k], bkey = KEYS[k + 1], alg = alg, bucket = alg >= 4,
    limit = tonumber(ARGV[i + 1]), period = tonumber(ARGV[i + 2]), burst = tonumber(ARGV[i + 3]),
    capacity = tonumber(ARGV[i + 4]), scale = tonumber(ARGV[i + 5]), T = tonumber(ARGV[i + 6]),
    capT = tonumber(ARGV[i + 7]), block = tonumber(ARGV[i + 8]), cost = tonumber(ARGV[i + 9]),
    init = tonumber(ARGV[i + 10]), ttl = tonumber(ARGV[i + 11]), proof = tonumber(ARGV[i + 12]) }
  k = k + 2
  i = i + 13
end
-- Decides one item under every binding epoch: allowed only if every epoch allows, and then taken
-- from each. The tightest answer is the one returned.
local function decide(it, list, commit)
  if it.block > 0 then
    local b = call('GET', it.bkey)
    if b and tonumber(b) > NOW then
      local wait = tonumber(b) - NOW
      return {0, 0, wait, wait, 2, -1}
    end
  end
  local ds, ok = {}, true
  for n, ep in ipairs(list) do
    ds[n] = CHECK[it.alg](ep[1], ep[2], it.cost, false)
    if ds[n][1] ~= 1 then ok = false end
  end
  if ok and commit and it.cost > 0 then
    for n, ep in ipairs(list) do ds[n] = CHECK[it.alg](ep[1], ep[2], it.cost, true) end
  end
  local d
  for _, x in ipairs(ds) do
    if d == nil or (d[1] == 1 and x[1] == 0) then
      d = x
    elseif x[1] == d[1] then
      d[2], d[3], d[4] = min(d[2], x[2]), max(d[3], x[3]), max(d[4], x[4])
      if x[6] > d[6] then d[6] = x[6] end
    end
  end
  -- Over this region's share but not over the limit: not 'cost-exceeds-capacity' (the share may grow).
  if d[5] == 1 and it.cost <= it.capacity then d[5], d[4] = 0, it.period end
  return d
end
local function block(it)
  if it.block > 0 then call('SET', it.bkey, fmt(NOW + it.block), 'PX', fmt(it.block + GRACE)) end
end
local function demand(it)
  local w = floor(NOW / it.period)
  call('HINCRBY', it.rkey, 'q:' .. fmt(w), it.cost)
  call('HDEL', it.rkey, 'q:' .. fmt(w - 2))
end
local lists, shares, looks, fits, ats = {}, {}, {}, true, {}
for n, it in ipairs(items) do
  local rec
  lists[n], shares[n], rec = epochs(it)
  ats[n] = NOW
  if COMMIT then
    demand(it)
    if NOW > num(rec.hw) then call('HSET', it.rkey, 'hw', fmt(NOW)) end
  end
  call('PEXPIRE', it.rkey, fmt(it.ttl))
  looks[n] = decide(it, lists[n], COMMIT and not ALL)
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
      looks[n] = decide(it, lists[n], true)
    end
  else
    for n, it in ipairs(items) do
      NOW = ats[n]
      if looks[n][1] == 0 and looks[n][5] ~= 2 then block(it) end
    end
  end
end
local out = {}
for n, d in ipairs(looks) do
  for j = 1, 6 do out[#out + 1] = d[j] end
  out[#out + 1] = shares[n]
  out[#out + 1] = ats[n]
end
return out
`;

// KEYS: lease records. ARGV after the prelude: nothing. Returns per record: inc (or '' when gone),
// share, demand (units asked this window and the last), its TTL, then per peer: units given, the
// incarnation of that peer they were given to, its reported share and demand, and when this region
// last gave it units.
const READ_SCRIPT = `${PRELUDE}
local out = {}
for _, rkey in ipairs(KEYS) do
  local rec = record(rkey)
  if not rec.inc then
    out[#out + 1] = ''
  else
    out[#out + 1] = rec.inc
    out[#out + 1] = num(rec.s)
    local d = 0
    for f, v in pairs(rec) do if sub(f, 1, 2) == 'q:' then d = d + tonumber(v) end end
    out[#out + 1] = d
    out[#out + 1] = call('PTTL', rkey)
    for _, j in ipairs(PEERS) do
      out[#out + 1] = num(rec['g:' .. j])
      out[#out + 1] = rec['gi:' .. j] or ''
      out[#out + 1] = num(rec['os:' .. j])
      out[#out + 1] = num(rec['od:' .. j])
      out[#out + 1] = num(rec['gt:' .. j])
    end
  end
end
return out
`;

// At the receiving region. ARGV after the prelude (ME = the sender here): the receiver's new
// incarnation, then per record 8 fields: the receiver's initial share, TTL, the sender's incarnation,
// units given to the receiver, the receiver incarnation they were given to, the sender's share and
// demand, and when the sender gave (NOW is the sender's clock). Returns per record the receiver's incarnation.
const MERGE_SCRIPT = `${PRELUDE}
local NEWINC = ARGV[A]
local out, k = {}, 1
for i = A + 1, #ARGV, 8 do
  local rkey = KEYS[k]
  k = k + 1
  local rec = record(rkey)
  ensure(rkey, rec, tonumber(ARGV[i]), NEWINC)
  local from = ME
  observe(rkey, rec, from, ARGV[i + 2], NOW)
  if ARGV[i + 4] == rec.inc and tonumber(ARGV[i + 3]) > num(rec['r:' .. from]) then
    setf(rkey, rec, 'r:' .. from, ARGV[i + 3])
    if tonumber(ARGV[i + 7]) > num(rec['rt:' .. from]) then setf(rkey, rec, 'rt:' .. from, ARGV[i + 7]) end
  end
  setf(rkey, rec, 'os:' .. from, ARGV[i + 5])
  setf(rkey, rec, 'od:' .. from, ARGV[i + 6])
  call('PEXPIRE', rkey, ARGV[i + 1])
  out[#out + 1] = rec.inc
end
return out
`;

// Back at the sender once a push landed. ARGV after the prelude: the peer, then per record the
// peer's incarnation it answered with. The push refreshed the peer's record: it still holds it.
const ACK_SCRIPT = `${PRELUDE}
local peer = ARGV[A]
for n, rkey in ipairs(KEYS) do
  local rec = record(rkey)
  if rec.inc then observe(rkey, rec, peer, ARGV[A + n], NOW) end
end
return 1
`;

// Gives units of this region's share to a peer. ARGV after the prelude: the peer, units, this
// region's initial share, PROOF. Only out of the share held now, and only to a peer whose
// incarnation is known. Returns the units given. The next decision starts the smaller epoch.
const GIVE_SCRIPT = `${PRELUDE}
local rkey, peer, units, init, proof = KEYS[1], ARGV[A], tonumber(ARGV[A + 1]), tonumber(ARGV[A + 2]), tonumber(ARGV[A + 3])
local rec = record(rkey)
if not rec.inc or not rec['gi:' .. peer] then return 0 end
local share = share_of(rec, init, proof)
units = min(units, share)
if units <= 0 then return 0 end
setf(rkey, rec, 'g:' .. peer, fmt(num(rec['g:' .. peer]) + units))
setf(rkey, rec, 'gt:' .. peer, fmt(NOW))
return units
`;

// KEYS: a lease record, the block key. Returns inc, e, s, pe, ps, pu ('' when there is no record):
// the epochs a refund or a reset applies to.
const EPOCHS_SCRIPT = `
local h = redis.call('HMGET', KEYS[1], 'inc', 'e', 's', 'pe', 'ps', 'pu')
for i = 1, 6 do h[i] = h[i] or '' end
return h
`;

// KEYS: a lease record, the block key. Forgets the algorithm state of every epoch and the block; the
// share (what was given and received) stays, since other regions count on it.
const RESET_SCRIPT = `
local h = redis.call('HMGET', KEYS[1], 'inc', 'e', 'pe')
redis.call('DEL', KEYS[2])
if not h[1] then return 0 end
redis.call('DEL', KEYS[1] .. '^' .. h[1] .. '.' .. h[2])
if h[3] then redis.call('DEL', KEYS[1] .. '^' .. h[1] .. '.' .. h[3]) end
return 1
`;

export const ESCROW_CHECK = script('mr:escrow:check', CHECK_SCRIPT);
export const ESCROW_READ = script('mr:escrow:read', READ_SCRIPT);
export const ESCROW_MERGE = script('mr:escrow:merge', MERGE_SCRIPT);
export const ESCROW_ACK = script('mr:escrow:ack', ACK_SCRIPT);
export const ESCROW_GIVE = script('mr:escrow:give', GIVE_SCRIPT);
export const ESCROW_EPOCHS = script('mr:escrow:epochs', EPOCHS_SCRIPT);
export const ESCROW_RESET = script('mr:escrow:reset', RESET_SCRIPT);
