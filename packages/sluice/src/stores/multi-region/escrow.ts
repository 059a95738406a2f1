/**
 * `'escrow'` mode: every region decides within its own share of the global limit (escrow-lua.ts), so
 * the regions together never admit more than the limit, whatever the algorithm and whatever the
 * network does. The price is under-admission: a region that needs more waits for another region to
 * ask another region for units (rebalance.ts, escrow-sync.ts): one sync and one round trip later.
 */
import type { Decision } from '../../core/decision.js';
import { isBucketAlgorithm, type ResolvedPolicy } from '../../core/policy.js';
import { decodeDecision } from '../redis/decode.js';
import { hexArg } from '../redis/hex.js';
import { ALGORITHM_CODES } from '../redis/lua.js';
import type { Runner } from '../redis/runner.js';
import { scriptCall } from '../redis/script-args.js';
import { REFUND_SCRIPT } from '../redis/scripts.js';
import type { StoreItem } from '../store.js';
import { ESCROW_CHECK, ESCROW_CHECK_BY_CODE, ESCROW_EPOCHS, ESCROW_RESET } from './escrow-lua.js';
import { leaseRecordKey, regionBlockKey, tagOf } from './keys.js';

/** This region's initial share of `limit`: an even split, the remainder to the first regions by name. */
export function initialShare(limit: number, regions: readonly string[], region: string): number {
  const sorted = [...regions].sort();
  const n = sorted.length;
  const index = sorted.indexOf(region);
  return Math.floor(limit / n) + (index < limit % n ? 1 : 0);
}

/**
 * How long a lease record lives without use: four horizons (the longest an admission matters — two
 * windows, or the time a full bucket takes to drain), and at least 10 minutes. Units received from a
 * peer count only for half of it after the peer was last heard of (see escrow-lua.ts).
 */
export function leaseTtlMs(p: ResolvedPolicy): number {
  const drain = isBucketAlgorithm(p.algorithm) && p.scale > 0 ? Math.ceil(p.capacityTicks / p.scale) : 0;
  return Math.max(600_000, 4 * Math.max(drain, 2 * p.periodMs));
}

/**
 * How long units received from a peer count after the peer was last known to hold its record (PROOF
 * in escrow-lua.ts): half the record's TTL, so a peer whose record expired while cut off is no longer
 * counted before anything it gave could count twice.
 */
export function proofMs(p: ResolvedPolicy): number {
  return Math.floor(leaseTtlMs(p) / 2);
}

/** The policy of a share (the Lua `scaled`): limit scaled, burst scaled down, never a faster rate. */
export function sharePolicy(p: ResolvedPolicy, share: number): ResolvedPolicy {
  if (share === p.limit) return p;
  let capacity = isBucketAlgorithm(p.algorithm) ? Math.floor((p.burst * share) / p.limit) : share;
  if (share === 0) capacity = 0;
  let scale = 1;
  let intervalTicks = p.periodMs;
  if (share > 0) {
    const g = gcd(share, p.periodMs);
    scale = share / g;
    if (scale <= 1500) intervalTicks = (p.periodMs * scale) / share;
    else {
      scale = 1500;
      intervalTicks = Math.max(1, Math.ceil((p.periodMs * 1500) / share));
    }
  }
  return { ...p, limit: share, capacity, scale, intervalTicks, capacityTicks: capacity * intervalTicks };
}

function gcd(a: number, b: number): number {
  while (b !== 0) [a, b] = [b, a % b];
  return a;
}

/** A decision, as the multi-region store's `onDecided` option hears of it. */
export interface DecidedEvent extends StoreItem {
  readonly decision: Decision;
  /**
   * The instant the region decided at: the caller's `nowMs`, or — escrow mode, when this region had
   * already decided a later-stamped request on this key — that later instant (time never goes back
   * for a key within a region).
   */
  readonly atMs: number;
  /** Escrow mode: this region's share of the limit when it decided. */
  readonly share?: number;
}

/** The escrow-mode operations of one region. */
export interface EscrowRegion {
  check(items: readonly StoreItem[], nowMs: number, commit: boolean, all: boolean): Promise<Decision[]>;
  refund(key: string, policy: ResolvedPolicy, cost: number, nowMs: number): Promise<void>;
  reset(key: string, policy: ResolvedPolicy): Promise<void>;
}

/**
 * The time constant of the demand estimate, in ms: a few syncs (demand must move shares about as
 * fast as the sync can), at most a quarter of the period (a load that moved away stops counting
 * within the window).
 */
export function demandTauMs(p: ResolvedPolicy, syncIntervalMs: number): number {
  return Math.max(20, Math.min(Math.floor(p.periodMs / 4), 2 * syncIntervalMs));
}

/** The 13 numbers of a policy, as escrow-lua.ts's `make_item()` takes them, in its order. */
type PolicyNumbers = [
  algorithm: number,
  limit: number,
  period: number,
  burst: number,
  capacity: number,
  scale: number,
  intervalTicks: number,
  capacityTicks: number,
  blockMs: number,
  init: number,
  ttl: number,
  proof: number,
  tau: number,
];

export function policyNumbers(p: ResolvedPolicy, init: number, syncIntervalMs: number, blockMs: number): PolicyNumbers {
  const ttl = leaseTtlMs(p);
  return [
    ALGORITHM_CODES[p.algorithm],
    p.limit,
    p.periodMs,
    p.burst,
    p.capacity,
    p.scale,
    p.intervalTicks,
    p.capacityTicks,
    blockMs,
    init,
    ttl,
    proofMs(p),
    demandTauMs(p, syncIntervalMs),
  ];
}

/** Appends the ITEM_FIELDS of one item (escrow-lua.ts, \`item()\`) to `args`. */
export function pushItemFields(
  args: string[],
  p: ResolvedPolicy,
  init: number,
  syncIntervalMs: number,
  blockMs: number,
  cost: number,
): void {
  for (const n of policyNumbers(p, init, syncIntervalMs, blockMs)) args.push(String(n));
  args.push(String(cost));
}

/** Arguments every escrow script starts with. */
export function escrowHead(nowMs: number, graceMs: number, region: string, peers: readonly string[]): string[] {
  return [String(nowMs), String(graceMs), region, String(peers.length), ...peers];
}

/** This process's part of incarnation ids: random, so two processes never make the same one. */
const incarnationBase = Math.floor(Math.random() * 2 ** 48).toString(36);
let incarnations = 0;
/**
 * An incarnation id for a record this call may create: never the same twice (a record created anew
 * must not be taken by a peer for the one before), and cheap, since every check call carries one.
 */
export const newIncarnation = () => `${incarnationBase}-${++incarnations}`;

/**
 * The escrow operations against the local region's Redis. `touched(recordKey, policy, cost, atMs, tauMs)`
 * hears of every record a decision used, for the sync loop (which sends shares and demand, and
 * rebalances) and the demand estimate (demand.ts).
 */
export function createEscrowRegion(
  runner: Runner,
  prefix: string,
  region: string,
  regions: readonly string[],
  graceMs: number,
  clockSkewMs: number,
  syncIntervalMs: number,
  touched: (recordKey: string, policy: ResolvedPolicy, cost: number, atMs: number, tauMs: number) => void,
  onDecided: ((event: DecidedEvent) => void) | undefined,
): EscrowRegion {
  const peers = regions.filter((r) => r !== region).sort();
  // What only the full path reads, as one argument (escrow-lua.ts, the check script's tail).
  const tail = [graceMs, region, peers.length, ...peers, clockSkewMs].join(' ');
  /** Each policy as the check script's text (escrow-lua.ts, POLICY_HEAD), built once per policy object. */
  const texts = new WeakMap<ResolvedPolicy, string>();
  const policyText = (p: ResolvedPolicy) => {
    let t = texts.get(p);
    if (t === undefined) {
      const [alg, limit, period, burst, capacity, scale, T, capT, block, init, ttl, proof, tau] = policyNumbers(
        p,
        initialShare(p.limit, regions, region),
        syncIntervalMs,
        p.blockMs,
      );
      t = [period, capacity, block, ttl, graceMs, alg, limit, burst, scale, T, capT, init, proof, tau]
        .map(hexArg)
        .join(' ');
      texts.set(p, t);
    }
    return t;
  };
  return {
    async check(items, nowMs, commit, all) {
      const keys: string[] = [];
      const records: string[] = [];
      // Each distinct policy once (a batch is mostly one), then per item its policy's index and cost.
      const policies: ResolvedPolicy[] = [];
      const refs: string[] = [];
      const algorithm = (items[0] as StoreItem).policy.algorithm;
      let one = true;
      for (const { key, policy: p, cost } of items) {
        const tag = tagOf(prefix, key);
        const rkey = leaseRecordKey(tag, p.id);
        records.push(rkey);
        keys.push(rkey, regionBlockKey(tag, p.id));
        let at = policies.indexOf(p);
        if (at < 0) {
          at = policies.push(p) - 1;
          if (p.algorithm !== algorithm) one = false;
        }
        // The usual item (first policy, cost 1) is '1'; others 'index:cost' (escrow-lua.ts, the check script).
        refs.push(at === 0 && cost === 1 ? '1' : `${at + 1}:${cost}`);
      }
      const args: string[] = [String(nowMs), all ? '1' : '0', commit ? '1' : '0', String(policies.length)];
      for (const p of policies) args.push(policyText(p));
      for (const r of refs) args.push(r);
      args.push(tail, newIncarnation());
      const code = String(ALGORITHM_CODES[algorithm]);
      const r = (await runner.script(
        one ? (ESCROW_CHECK_BY_CODE[code] ?? ESCROW_CHECK) : ESCROW_CHECK,
        keys,
        args,
      )) as unknown[];
      return items.map((item, i) => {
        const d = decodeDecision(r, i * 8, item.policy.limit);
        const atMs = Number(r[i * 8 + 7]);
        if (commit) {
          touched(records[i] as string, item.policy, item.cost, atMs, demandTauMs(item.policy, syncIntervalMs));
        }
        // A literal, not a spread of the item: see limiter/combine.ts (decisionWithResults).
        if (onDecided !== undefined) {
          const share = Number(r[i * 8 + 6]);
          onDecided({ key: item.key, policy: item.policy, cost: item.cost, decision: d, atMs, share });
        }
        return d;
      });
    },

    async refund(key, policy, cost, nowMs) {
      const tag = tagOf(prefix, key);
      const rkey = leaseRecordKey(tag, policy.id);
      const bkey = regionBlockKey(tag, policy.id);
      const h = (await runner.script(ESCROW_EPOCHS, [rkey, bkey], [])) as string[];
      const [inc, e, s, pe, ps, pu] = h;
      if (!inc) return;
      // Both epochs that bind took the units; give them back to both.
      const epochs: [string, number][] = [[`${rkey}^${inc}.${e}`, Number(s)]];
      if (pe && Number(pu) > nowMs && !isBucketAlgorithm(policy.algorithm)) {
        epochs.push([`${rkey}^${inc}.${pe}`, Number(ps)]);
      }
      const items = epochs.map(([k, share]) => ({
        key: k,
        bkey,
        policy: sharePolicy(policy, share),
        fields: [String(cost)],
      }));
      await runner.call(REFUND_SCRIPT, scriptCall(REFUND_SCRIPT, [String(nowMs), String(graceMs)], items));
    },

    async reset(key, policy) {
      const tag = tagOf(prefix, key);
      await runner.script(ESCROW_RESET, [leaseRecordKey(tag, policy.id), regionBlockKey(tag, policy.id)], []);
    },
  };
}
