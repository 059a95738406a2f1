/**
 * `'escrow'` mode: every region decides within its own share of the global limit (escrow-lua.ts), so
 * the regions together never admit more than the limit, whatever the algorithm and whatever the
 * network does. The price is under-admission: a region that needs more waits for another region to
 * ask another region for units (rebalance.ts, escrow-sync.ts): one sync and one round trip later.
 */
import type { Decision } from '../../core/decision.js';
import { isBucketAlgorithm, type ResolvedPolicy } from '../../core/policy.js';
import { refundAge } from '../redis/many-slots.js';
import type { Runner } from '../redis/runner.js';
import { scriptCall } from '../redis/script-args.js';
import { REFUND_SCRIPT } from '../redis/scripts.js';
import type { StoreItem } from '../store.js';
import { createPolicyTexts } from './escrow-args.js';
import { checkCall, checkedItem } from './escrow-check.js';
import { ESCROW_EPOCHS, ESCROW_RESET } from './escrow-lua.js';
import { demandTauMs, sharePolicy } from './escrow-share.js';
import { leaseRecordKey, regionBlockKey, tagOf } from './keys.js';

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
  refund(key: string, policy: ResolvedPolicy, cost: number, nowMs: number, takenAtMs?: number): Promise<void>;
  reset(key: string, policy: ResolvedPolicy): Promise<void>;
}

/** Where one region's escrow operations run, and who hears of them. */
export interface EscrowRegionOptions {
  readonly runner: Runner;
  readonly prefix: string;
  readonly region: string;
  readonly regions: readonly string[];
  readonly graceMs: number;
  readonly clockSkewMs: number;
  readonly syncIntervalMs: number;
  /**
   * Hears of every record a committed decision used, for the sync loop (which sends shares and
   * demand, and rebalances) and the demand estimate (demand.ts).
   */
  readonly touched: (recordKey: string, policy: ResolvedPolicy, cost: number, atMs: number, tauMs: number) => void;
  readonly onDecided: ((event: DecidedEvent) => void) | undefined;
}

/** The escrow operations against the local region's Redis. */
export function createEscrowRegion(o: EscrowRegionOptions): EscrowRegion {
  const { runner, prefix, graceMs, syncIntervalMs, touched, onDecided } = o;
  const peers = o.regions.filter((r) => r !== o.region).sort();
  // What only the full path reads, as one argument (escrow-lua.ts, the check script's tail).
  const tail = [graceMs, o.region, peers.length, ...peers, o.clockSkewMs].join(' ');
  const policyText = createPolicyTexts(o.regions, o.region, graceMs, syncIntervalMs);
  return {
    async check(items, nowMs, commit, all) {
      const call = checkCall(prefix, items, nowMs, { commit, all }, policyText, tail);
      const reply = (await runner.script(call.script, call.keys, call.args)) as unknown[];
      return items.map((item, i) => {
        const { decision, share, atMs } = checkedItem(reply, i, item.policy);
        if (commit) {
          touched(call.records[i] as string, item.policy, item.cost, atMs, demandTauMs(item.policy, syncIntervalMs));
        }
        // A literal, not a spread of the item: see limiter/combine.ts (decisionWithResults).
        if (onDecided !== undefined) {
          onDecided({ key: item.key, policy: item.policy, cost: item.cost, decision, atMs, share });
        }
        return decision;
      });
    },
    refund: (key, policy, cost, nowMs, takenAtMs) =>
      refundEpochs(
        runner,
        prefix,
        graceMs,
        { key, policy, cost, ...(takenAtMs === undefined ? {} : { takenAtMs }) },
        nowMs,
      ),
    async reset(key, policy) {
      const tag = tagOf(prefix, key);
      await runner.script(ESCROW_RESET, [leaseRecordKey(tag, policy.id), regionBlockKey(tag, policy.id)], []);
    },
  };
}

/** Gives `item.cost` back to every epoch that took it: the current one, and the previous one while it binds. */
async function refundEpochs(runner: Runner, prefix: string, graceMs: number, item: StoreItem, nowMs: number) {
  const { policy, cost } = item;
  const tag = tagOf(prefix, item.key);
  const rkey = leaseRecordKey(tag, policy.id);
  const bkey = regionBlockKey(tag, policy.id);
  const h = (await runner.script(ESCROW_EPOCHS, [rkey, bkey], [])) as string[];
  const [inc, e, s, pe, ps, pu] = h;
  if (!inc) return;
  const epochs: [string, number][] = [[`${rkey}^${inc}.${e}`, Number(s)]];
  if (pe && Number(pu) > nowMs && !isBucketAlgorithm(policy.algorithm)) {
    epochs.push([`${rkey}^${inc}.${pe}`, Number(ps)]);
  }
  const items = epochs.map(([k, share]) => ({
    key: k,
    bkey,
    policy: sharePolicy(policy, share),
    fields: [String(cost), refundAge(item, nowMs)],
  }));
  await runner.call(REFUND_SCRIPT, scriptCall(REFUND_SCRIPT, [String(nowMs), String(graceMs)], items));
}
