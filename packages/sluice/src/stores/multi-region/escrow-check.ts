/**
 * Escrow mode's decision call: items as the check script's keys and arguments (each distinct policy
 * once, then per item a short reference), and the script's reply as decisions.
 */
import type { Decision } from '../../core/decision.js';
import type { ResolvedPolicy } from '../../core/policy.js';
import { decodeDecision } from '../redis/decode.js';
import { ALGORITHM_CODES } from '../redis/lua.js';
import type { Script } from '../redis/scripts.js';
import type { StoreItem } from '../store.js';
import { newIncarnation } from './escrow-args.js';
import { ESCROW_CHECK, ESCROW_CHECK_BY_CODE } from './escrow-lua.js';
import { leaseRecordKey, regionBlockKey, tagOf } from './keys.js';

/** One check script call. */
export interface CheckCall {
  readonly script: Script;
  readonly keys: string[];
  readonly args: string[];
  /** Each item's lease record key, in order. */
  readonly records: string[];
}

/**
 * The call deciding `items`. `policyText` gives a policy's text (escrow-args.ts); `tail` is what only
 * the script's full path reads, as one argument (grace, this region, the peers, the clocks' disagreement).
 */
export function checkCall(
  prefix: string,
  items: readonly StoreItem[],
  nowMs: number,
  flags: { readonly commit: boolean; readonly all: boolean },
  policyText: (p: ResolvedPolicy) => string,
  tail: string,
): CheckCall {
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
  const args: string[] = [String(nowMs), flags.all ? '1' : '0', flags.commit ? '1' : '0', String(policies.length)];
  for (const p of policies) args.push(policyText(p));
  for (const r of refs) args.push(r);
  args.push(tail, newIncarnation());
  // Scripts of one algorithm are a little cheaper (and take the fast path).
  const byCode = one ? ESCROW_CHECK_BY_CODE[String(ALGORITHM_CODES[algorithm])] : undefined;
  return { script: byCode ?? ESCROW_CHECK, keys, args, records };
}

/** A decided item, as the check script answered it (8 fields per item: the decision, the share, the instant). */
export interface CheckedItem {
  readonly decision: Decision;
  readonly share: number;
  readonly atMs: number;
}

/** The `i`th item's answer in the check script's reply. */
export function checkedItem(reply: unknown[], i: number, policy: ResolvedPolicy): CheckedItem {
  return {
    decision: decodeDecision(reply, i * 8, policy.limit),
    share: Number(reply[i * 8 + 6]),
    atMs: Number(reply[i * 8 + 7]),
  };
}
