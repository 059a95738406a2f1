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
import { CHECK_SNIPPETS } from '../redis/lua.js';
import { LUA_SOURCES } from '../redis/lua-sources.js';
import type { Script } from '../redis/scripts.js';

// The static Lua lives in stores/multi-region/lua/escrow-*.lua (generated into lua-sources.ts); this module
// generates only what must be: the constants shared with TypeScript, where a script's head is, and the
// algorithms' check snippets pasted in.

function script(name: string, source: string): Script {
  return { name, source, sha: createHash('sha1').update(source).digest('hex') };
}

/** A static part: stores/multi-region/lua/escrow-<name>.lua. */
const part = (name: 'prelude' | 'shares' | 'fast-path' | 'check' | 'read' | 'merge') =>
  LUA_SOURCES[`multi-region/escrow-${name}`];

/**
 * How much more than its demand a region keeps, and asks for: demand is an estimate (the units asked
 * over the last TAU, as a rate per period), and a region a little short rejects requests.
 */
export const DEMAND_HEADROOM = 1.25;

/** Policy fields per item, as `item()` reads them (the cost last). */
export const ITEM_FIELDS = 14;

/** Fields per record of MERGE, after the item's policy fields. */
export const MERGE_FIELDS = 9;

/**
 * The fast path's copy of a lease record (field fp, binary, struct.pack): the instants it holds from and
 * until, the share and its policy's capacity, scale, T and capT, then (text) the epoch key's suffix.
 */
const FP = '<ddddddd';

/** The first line of every script but READ: FP, for the fast path and keep_fp (escrow-shares.lua). */
const FP_LINE = `local FP = '${FP}'\n`;

/**
 * The line before the prelude: HEAD_AT, the ARGV holding the head as words (the check script's tail), or
 * false when the head is ARGV from ARGV[2] on (MERGE). escrow-prelude.lua reads it.
 */
const headAt = (at: string) => `local HEAD_AT = ${at}\n`;

/** Every algorithm's code. */
const ALL_CODES = Object.keys(CHECK_SNIPPETS);

/**
 * The check snippets of the algorithms `codes` as CHECK[code] = function(key, policy table, cost, commit)
 * → decision table. A decision's script defines only its own algorithm's (every function a script
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

/** The prelude, the checks of `codes`, and the shares and epochs library built on them. */
const library = (codes: readonly string[]) => `${part('prelude')}${checks(codes)}\n${part('shares')}`;

/** Where escrow-fast-path.lua takes the algorithm's snippet: inline, no closure (the point of the fast path). */
const SNIPPET_MARK = "-- SNIPPET (escrow-lua.ts pastes the algorithm's check snippet here)\n";

/**
 * The usual decision (escrow-fast-path.lua), before anything else in the check script runs: a record
 * whose fast-path copy (fp, written by keep_fp) holds at this instant. It reads two fields, the five
 * numbers it needs of the policy and the copy (binary: no number parsing), runs the algorithm's snippet
 * inline and returns — the prelude and the epochs library (two dozen closures, built again on every
 * call: most of the script's cost in Redis) never run. It decides exactly as the full path would: same
 * fields, same arithmetic, same writes. Items are decided in order; from the first one that is not
 * usual (or for all-or-nothing calls, always) the full path takes over, from that item on (FIRST), and
 * appends to FOUT.
 */
function fastPath(code: string): string {
  const [before, after, ...rest] = part('fast-path').split(SNIPPET_MARK);
  if (after === undefined || rest.length > 0) throw new Error('escrow-fast-path.lua: one snippet mark expected');
  return `${before}${CHECK_SNIPPETS[Number(code)]}\n${after}`;
}

/**
 * The check script. Its policies are text: each one a single ARGV of 14 hexadecimal whole numbers,
 * space-separated (escrow-args.ts): the five the fast path reads (period, capacity, blockMs, record TTL,
 * the store's grace), then the rest of make_item's (algorithm code, limit, burst, scale, T, capT, this
 * region's initial share, PROOF, TAU). The fast path matches only the first five; the full path reads
 * all of them. Not binary: one Buffer argument makes ioredis encode the whole command its slower way
 * (measured with eight callers on one connection: a quarter fewer calls per second, and more of each
 * call's garbage surviving young-generation collections).
 * ARGV: the time, all-or-nothing (1/0), commit (1/0), the number of policies, the policies, per item one
 * argument: '1' (the first policy, cost 1) or 'policy index:cost', the store's constant tail (words:
 * grace, this region, the peer count, the peers, the clocks' largest disagreement), and a new
 * incarnation. KEYS per item: the lease record, the block key. Returns per item the 6 decision
 * integers (see the Redis store's lua.ts), the share, and the instant it was decided at.
 * Scripts of one algorithm take the fast path first.
 */
function checkScript(codes: readonly string[]): string {
  const fast = codes.length === 1 ? fastPath(codes[0] as string) : 'local FOUT, FIRST = {}, 1\n';
  return `${FP_LINE}${fast}${headAt('5 + tonumber(ARGV[4]) + #KEYS / 2')}${library(codes)}${part('check')}`;
}

/**
 * MERGE: one region's record, as another region sends it. Runs in the receiver's Redis (ME = the
 * sender): by the sender's sync push, and — with what the receiver answered — back in the sender's own
 * Redis (ME = the receiver, nothing asked), which credits the units it gave.
 * ARGV after the head: the receiver's new incarnation, the clocks' disagreement, then per record the
 * ITEM_FIELDS of item() (the receiver's initial share; the cost is unused), then MERGE_FIELDS: the
 * sender's incarnation, the units it gave the receiver (running total), the receiver incarnation they
 * were given to, the instant of its last transfer, the sender's share and demand (sent, not kept:
 * nothing reads them here), the units it asks for, the stamp of that request, the sender's clock now.
 * Returns per record the receiver's incarnation, the units it gave the sender (running total), the
 * sender incarnation they were given to, the instant of that transfer, and the receiver's share and demand.
 */
const MERGE_SCRIPT =
  FP_LINE +
  headAt('false') +
  library(ALL_CODES) +
  `local ITEM_FIELDS, MERGE_FIELDS, DEMAND_HEADROOM = ${ITEM_FIELDS}, ${MERGE_FIELDS}, ${DEMAND_HEADROOM}\n` +
  part('merge');

/** Decides items of any algorithms. */
export const ESCROW_CHECK = script('mr:escrow:check', checkScript(ALL_CODES));
/** Decides items of one algorithm (by its code): the usual call, a little cheaper. */
export const ESCROW_CHECK_BY_CODE: Readonly<Record<string, Script>> = Object.fromEntries(
  ALL_CODES.map((code) => [code, script(`mr:escrow:check:${code}`, checkScript([code]))]),
);
/**
 * READ (escrow-read.lua): the sync's view of lease records, adding the demand this process counted. Not
 * the prelude: a sync reads every record a decision touched, and this script only reads the fields it
 * returns (two HMGETs), where loading both hashes whole cost about twice as much Redis time per record.
 */
export const ESCROW_READ = script('mr:escrow:read', part('read'));
export const ESCROW_MERGE = script('mr:escrow:merge', MERGE_SCRIPT);
/** The epochs a refund applies to (escrow-epochs.lua). */
export const ESCROW_EPOCHS = script('mr:escrow:epochs', LUA_SOURCES['multi-region/escrow-epochs']);
/** Forgets a key's algorithm state in this region (escrow-reset.lua). */
export const ESCROW_RESET = script('mr:escrow:reset', LUA_SOURCES['multi-region/escrow-reset']);
