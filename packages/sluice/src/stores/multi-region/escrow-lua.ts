/**
 * The Lua of `'escrow'` mode. Each region owns a *share* of the global limit and decides, alone and in
 * one round trip, with the algorithm's own step (the Redis store's snippets) scaled to that share.
 * Shares sum to at most the limit, so whatever every region admits together stays within it.
 *
 * A region's share is a bounded counter (Balegas et al., "Extending Eventually Consistent Cloud
 * Databases for Enforcing Numeric Invariants", SRDS 2015): its initial part, plus units other
 * regions gave it, minus units it gave away. In its lease record (a hash; the fields named with a
 * ':' in a second hash beside it, `<record>~`, written only by the sync):
 *   inc            its incarnation (a new one whenever the record is created)
 *   g:<j>, gi:<j>  units given to region j (a running total: the transfer record), and the
 *   gt:<j>         incarnation of j and the instant of the last transfer
 *   r:<j>, ri:<j>  units received from j (the largest total j reported), and j's incarnation
 *   rt:<j>, r0:<j> the instant of j's latest transfer, and what was received before it: a transfer
 *                  counts here only for decisions stamped from rt + the clocks' disagreement on
 *   ra:<j>         when j was last known to hold its record (a sync either way); units from j count
 *                  only within PROOF ms of it, so a peer that lost its record (expired while cut off)
 *                  cannot leave them counted twice
 *   ak:<j>         the stamp of the latest request for units from j that was served (a replayed
 *                  request gives nothing twice)
 *   e, s           the current epoch and its share; pe, ps, pu the previous epoch, still binding
 *   hw             the latest time stamp a decision (or a transfer) here carried
 *   dr, dt         demand: units asked, decayed exponentially (time constant TAU), as of dt. Each
 *                  process sums its own decisions' demand the same way (demand.ts) and adds it here
 *                  when its sync reads the record (READ): a decision does not write it
 *   sc, sn         the share, cached until the next instant it may change by itself (a transfer
 *                  starts to count, a proof runs out); any write to the transfer hash voids it
 *   fp             the fast path's copy of what a usual decision needs (binary; see keep_fp): written
 *                  by a decision of the full path, voided by any write to a field it is made of
 * Only the region itself writes g:*, and it merges r:* by max, so sync messages may be duplicated,
 * reordered or replayed; units a region gave and the other has not credited yet (the reply was lost
 * in a partition) belong to nobody until the next sync carries the running total again.
 *
 * Units move on request (the borrower's sync push carries how many it wants; the lender's Redis
 * gives what it can spare, in the same script, and answers with its running total) — see MERGE.
 * A lender gives only units it can spare: what its own demand does not need and, for the window
 * algorithms, what is still unused in its current window (so the borrower may use them at once).
 *
 * When the share changes:
 *  - window algorithms (fixed window, sliding window, sliding log): a growth applies in place (the
 *    state goes on, under the larger share), since the lender gave only units unused in its window
 *    and the borrower counts them only for later stamps. A shrink starts a new *epoch* (a fresh
 *    state key) and the previous epoch, whose state holds every admission, stays binding with the
 *    smaller share for one horizon (until the window ends; the next one too for the sliding window;
 *    one period for the log);
 *  - bucket algorithms (token and leaky bucket, GCRA): the new epoch starts empty after a shrink,
 *    and after a growth holding what the old one held (never more). A region's admissions over any
 *    interval are then at most its bucket at the start plus its refill since, and summed over
 *    regions that is within burst + rate × time (a transfer moves rate and room, never tokens).
 * A region gives units away only out of its own share, before telling anyone, so the receiver's
 * growth always comes after the giver's shrink.
 */

import { createHash } from 'node:crypto';
import { CHECK_SNIPPETS, fmt } from '../redis/lua-checks.js';
import { LUA_SOURCES } from '../redis/lua-sources.js';
import type { Script } from '../redis/scripts.js';

function script(name: string, source: string): Script {
  return { name, source, sha: createHash('sha1').update(source).digest('hex') };
}

/**
 * How much more than its demand a region keeps, and asks for: demand is an estimate (the units asked
 * over the last TAU, as a rate per period), and a region a little short rejects requests.
 */
export const DEMAND_HEADROOM = 1.25;

/**
 * What every escrow script starts with. ARGV[1] is the time; the *head* — grace, this region, the
 * peers (count, then names) — is at HEAD[H]: ARGV[2] on (MERGE: prelude('ARGV', '2')), or
 * the words of one argument (the check script's tail: a constant string per store, one ARGV instead
 * of six for three regions). A is the index in HEAD just after the peers.
 */
const prelude = (head: string, at: string) => `
local sub, find, sformat, floor, ceil, max, min = string.sub, string.find, string.format, math.floor, math.ceil, math.max, math.min
local call, tonumber, KEYS, ARGV = redis.call, tonumber, KEYS, ARGV
local HEAD, H = ${head}, ${at}
local NOW, GRACE, ME = tonumber(ARGV[1]), tonumber(HEAD[H]), HEAD[H + 1]
local STAMP = NOW
local SKEW = 0
local SERVER = false
local PEERS = {}
local npeers = tonumber(HEAD[H + 2])
for i = 1, npeers do PEERS[i] = HEAD[H + 2 + i] end
local A = H + 3 + npeers
local function fmt(x) return ${fmt('x')} end
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
`;

/**
 * The check snippets of the algorithms `codes` as functions of (key, policy table, cost, commit) →
 * decision table. A decision's script defines only its own algorithm's (every function a script
 * defines is built again on every call).
 */
const checks = (codes: readonly string[]) =>
  Object.entries(CHECK_SNIPPETS)
    .filter(([code]) => codes.includes(code))
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

/**
 * Shares and epochs, for the scripts that decide (CHECK) and the one that gives units (MERGE). An
 * item is a table: rkey, bkey, alg, bucket, limit, period, burst, capacity, scale, T, capT, block,
 * cost, init (this region's initial share), ttl, proof, tau.
 */
const epochsLib = (codes: readonly string[]) => `
local CHECK = {}
-- Tokens leaving this region's bucket with the units MERGE gives away (0 outside a give).
local GIVING = 0
${checks(codes)}
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
  local fp = struct.pack('${FP}', from, num(rec.sn), share, p.capacity, p.scale, p.T, p.capT) .. rec.inc .. '.' .. fmt(num(rec.e))
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
`;

const ALL_CODES = Object.keys(CHECK_SNIPPETS);

/** Policy fields per item, as `item()` reads them (the cost last). */
export const ITEM_FIELDS = 14;

/**
 * The check script's policies are text: each one a single ARGV of 14 hexadecimal whole numbers,
 * space-separated, in this order: the five the fast path reads (period, capacity, blockMs, record TTL,
 * the store's grace), then the rest of make_item's (algorithm code, limit, burst, scale, T, capT, this
 * region's initial share, PROOF, TAU). The fast path matches only the first five; the full path reads
 * all of them. Not binary: one Buffer argument makes ioredis encode the whole command its slower way
 * (measured with eight callers on one connection: a quarter fewer calls per second, and more of each
 * call's garbage surviving young-generation collections).
 */
const POLICY_HEAD = '^(%x+) (%x+) (%x+) (%x+) (%x+)';
/**
 * The fast path's copy of a lease record (field fp, binary): the instants it holds from and until, the
 * share and its policy's capacity, scale, T and capT, then (text) the epoch key's suffix.
 */
const FP = '<ddddddd';

/**
 * The usual decision, before anything else in the check script runs: a record whose fast-path copy
 * (fp, written by keep_fp below) holds at this instant. It reads two fields, the five numbers it needs
 * of the policy (POLICY_HEAD) and the copy (binary: no number parsing), runs the algorithm's snippet
 * inline and returns — the PRELUDE and the epochs library (two dozen closures, built again on every
 * call: most of the script's cost in Redis) never run. It decides exactly as the full path below
 * would: same fields, same arithmetic, same writes. Items are decided in order; from the first one
 * that is not usual (or for all-or-nothing calls, always) the full path takes over, from that item on
 * (FIRST), and appends to FOUT.
 */
const fastPath = (code: string) => `
local FOUT, FIRST = {}, 1
if ARGV[2] ~= '1' then
  local sub, find, sformat, floor, ceil, max, min = string.sub, string.find, string.format, math.floor, math.ceil, math.max, math.min
  local call, tonumber, KEYS, ARGV, unpack = redis.call, tonumber, KEYS, ARGV, struct.unpack
  local STAMP, SERVER, COMMIT = tonumber(ARGV[1]), false, ARGV[3] == '1'
  local I0 = 5 + tonumber(ARGV[4])
  local WCALL, WERR, type, PXAT = call, false, type, false
  local k = 1
  local PQ, period, pcapacity, block, ttl, GRACE
  for i = I0, I0 + #KEYS / 2 - 1 do
    local rkey, bkey = KEYS[k], KEYS[k + 1]
    local h = call('HMGET', rkey, 'fp', 'hw')
    if not h[1] then break end
    local hw = 0
    if h[2] then hw = tonumber(h[2]) end
    local NOW = max(STAMP, hw)
    local from, till, share, capacity, scale, T, capT, at = unpack('${FP}', h[1])
    if NOW < from or NOW >= till then break end
    local q, cost = 5, 1
    if ARGV[i] ~= '1' then
      local x = find(ARGV[i], ':', 1, true)
      q, cost = 4 + tonumber(sub(ARGV[i], 1, x - 1)), tonumber(sub(ARGV[i], x + 1))
    end
    -- The policy's numbers the fast path needs, read once per policy in a call (a batch is mostly one).
    if q ~= PQ then
      PQ = q
      local a, b, c, d, e = string.match(ARGV[q], '${POLICY_HEAD}')
      period, pcapacity, block, ttl, GRACE = tonumber(a, 16), tonumber(b, 16), tonumber(c, 16), tonumber(d, 16), tonumber(e, 16)
    end
    local limit = share
    -- The latest stamp (the full path's write, when it moved).
    if COMMIT and NOW ~= hw then
      call('HSET', rkey, 'hw', ${fmt('NOW')})
    end
    local tick = floor(ttl / 8)
    if not h[2] or floor(hw / tick) ~= floor(NOW / tick) then
      call('PEXPIRE', rkey, ${fmt('ttl')})
      call('PEXPIRE', rkey .. '~', ${fmt('ttl')})
    end
    local ok, remaining, reset, retry, reason, delay = 0, 0, 0, 0, 0, -1
    local b = false
    if block > 0 then b = call('GET', bkey) end
    if b and tonumber(b) > NOW then
      local wait = tonumber(b) - NOW
      remaining, reset, retry, reason = 0, wait, wait, 2
    else
      local key, commit = rkey .. '^' .. sub(h[1], at), COMMIT
      repeat
${(CHECK_SNIPPETS as Readonly<Record<string, string>>)[code]}
      until true
      if reason == 1 and cost <= pcapacity then reason, retry = 0, period end
      if ok ~= 1 and COMMIT and block > 0 then
        call('SET', bkey, ${fmt('NOW + block')}, 'PX', ${fmt('block + GRACE')})
      end
    end
    local n = #FOUT
    FOUT[n + 1], FOUT[n + 2], FOUT[n + 3], FOUT[n + 4] = ok, remaining, reset, retry
    FOUT[n + 5], FOUT[n + 6], FOUT[n + 7], FOUT[n + 8] = reason, delay, share, NOW
    FIRST, k = FIRST + 1, k + 2
  end
  if FIRST > #KEYS / 2 then return FOUT end
end
`;

// ARGV: the time, all-or-nothing (1/0), commit (1/0), the number of policies, each policy as text
// (POLICY_HEAD), per item one argument: '1' (the first policy, cost 1) or 'policy index:cost', the
// store's constant tail (words: grace, this region, the peer count, the peers, the clocks' largest
// disagreement), and a new incarnation. KEYS per item: the lease record, the block key. Returns per item the 6 decision
// integers (see the Redis store's lua.ts), the share, and the instant it was decided at.
const checkScript = (
  codes: readonly string[],
) => `${codes.length === 1 ? fastPath(codes[0] as string) : 'local FOUT, FIRST = {}, 1'}
local function words(s)
  local t = {}
  for w in string.gmatch(s, '%S+') do t[#t + 1] = w end
  return t
end
${prelude('words(ARGV[5 + tonumber(ARGV[4]) + #KEYS / 2])', '1')}
${epochsLib(codes)}
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
  -- The latest stamp (demand is the process's to count: see dr at the top of the file).
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
`;

// KEYS: lease records. ARGV: the head (escrowHead: the time, grace, this region, the peer count, the
// peers), then per record the demand this process counted since its last read (its decayed sum, the
// instant of that sum, TAU; 0 0 0 for none), added to the record's own (both decayed to the later
// instant: the sum of decayed sums is the decayed sum of all).
// Returns per record: inc (or '' when gone), share, the decayed demand sum and its instant, then per
// peer: units given, the incarnation of that peer they were given to, the instant of the last
// transfer, and the units received from that peer (the largest total it reported).
// Not the prelude: a sync reads every record a decision touched, and this script only reads the
// fields it returns (two HMGETs), where loading both hashes whole cost about twice as much Redis time
// per record.
const READ_SCRIPT = `
local call, tonumber, exp, max, sformat = redis.call, tonumber, math.exp, math.max, string.format
local npeers = tonumber(ARGV[4])
local A = 5 + npeers
local GIVEN = {}
for i = 1, npeers do
  local j = ARGV[4 + i]
  GIVEN[4 * i - 3], GIVEN[4 * i - 2], GIVEN[4 * i - 1], GIVEN[4 * i] = 'g:' .. j, 'gi:' .. j, 'gt:' .. j, 'r:' .. j
end
local out, o = {}, 0
for n, rkey in ipairs(KEYS) do
  local h = call('HMGET', rkey, 'inc', 's', 'dr', 'dt')
  if not h[1] then
    o = o + 1
    out[o] = ''
  else
    local a = A + 3 * (n - 1)
    local add, dr, dt = tonumber(ARGV[a]), h[3] or '0', h[4] or '0'
    if add > 0 then
      local at, tau, old, since = tonumber(ARGV[a + 1]), tonumber(ARGV[a + 2]), tonumber(dr), tonumber(dt)
      local t = max(at, since)
      local sum = add * exp((at - t) / tau)
      if old > 0 then sum = sum + old * exp((since - t) / tau) end
      dr, dt = ${fmt('sum')}, ${fmt('t')}
      call('HSET', rkey, 'dr', dr, 'dt', dt)
    end
    out[o + 1], out[o + 2], out[o + 3], out[o + 4] = h[1], tonumber(h[2] or '0'), dr, dt
    o = o + 4
    -- The transfer hash (see the top of the file): what this region gave each peer, and received.
    local g = call('HMGET', rkey .. '~', unpack(GIVEN))
    for i = 1, 4 * npeers, 4 do
      out[o + 1], out[o + 2], out[o + 3] = tonumber(g[i] or '0'), g[i + 1] or '', tonumber(g[i + 2] or '0')
      out[o + 4] = tonumber(g[i + 3] or '0')
      o = o + 4
    end
  end
end
return out
`;

/** Fields per record of MERGE, after the item's policy fields. */
export const MERGE_FIELDS = 9;

// One region's record, as another region sends it. Runs in the receiver's Redis (ME = the sender):
// by the sender's sync push, and — with what the receiver answered — back in the sender's own Redis
// (ME = the receiver, nothing asked), which credits the units it gave.
// ARGV after the prelude: the receiver's new incarnation, the clocks' disagreement, then per record
// the ITEM_FIELDS of item() (the receiver's initial share; the cost is unused), then MERGE_FIELDS:
// the sender's incarnation, the units it gave the receiver (running total), the receiver
// incarnation they were given to, the instant of its last transfer, the sender's share and demand
// (sent, not kept: nothing reads them here), the units it asks for, the stamp of that request, the
// sender's clock now.
// Per record: records the sender (it holds its record), credits what it gave, and gives it what it
// asks for as far as the receiver can spare. Returns per record the receiver's incarnation, the
// units it gave the sender (running total), the sender incarnation they were given to, the instant
// of that transfer, and the receiver's share and demand.
const MERGE_SCRIPT = `${prelude('ARGV', '2')}
${epochsLib(ALL_CODES)}
local NEWINC = ARGV[A]
SKEW = tonumber(ARGV[A + 1])
local out, k = {}, 1
for i = A + 2, #ARGV, ${14 + 9} do
  local it = item(i, KEYS[k], '')
  it.block = 0
  k = k + 1
  local m = i + ${14}
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
    local spare = share - min(share, ceil(demand_of(rec, it.tau, it.period) * ${DEMAND_HEADROOM}))
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
`;

const EPOCHS_SCRIPT = LUA_SOURCES['multi-region/escrow-epochs'];

const RESET_SCRIPT = LUA_SOURCES['multi-region/escrow-reset'];

/** Decides items of any algorithms. */
export const ESCROW_CHECK = script('mr:escrow:check', checkScript(ALL_CODES));
/** Decides items of one algorithm (by its code): the usual call, a little cheaper. */
export const ESCROW_CHECK_BY_CODE: Readonly<Record<string, Script>> = Object.fromEntries(
  ALL_CODES.map((code) => [code, script(`mr:escrow:check:${code}`, checkScript([code]))]),
);
export const ESCROW_READ = script('mr:escrow:read', READ_SCRIPT);
export const ESCROW_MERGE = script('mr:escrow:merge', MERGE_SCRIPT);
export const ESCROW_EPOCHS = script('mr:escrow:epochs', EPOCHS_SCRIPT);
export const ESCROW_RESET = script('mr:escrow:reset', RESET_SCRIPT);
