/**
 * The argument layout of a script call: each item's keys, fields and policy index, each distinct policy sent once, and
 * the compact form that keeps a batch of N requests near N short arguments.
 */
import type { ResolvedPolicy } from '../../core/policy.js';
import type { Script } from './scripts.js';
import { batchPolicyArgs, policyArgs } from './scripts.js';

/** One item of a script call: its two keys, its policy and its own ARGV fields (before the policy index). */
export interface ScriptItem {
  readonly key: string;
  readonly bkey: string;
  readonly policy: ResolvedPolicy;
  readonly fields: readonly string[];
}

/**
 * A whole script call, `EVALSHA sha numkeys KEYS… ARGV…`, in one array (layout in lua.ts): KEYS are
 * each item's two keys; ARGV is `head`, the policy count, per item its fields and the 1-based index of
 * its policy, then each distinct policy once (8 fields). With `compact` (the batch script), an item's
 * fields and index are one argument, 'fields:…:index', and the usual item — fields ['1', '1'] (commit,
 * cost 1) with the first policy — is just '1'; an item's block key goes only when its policy blocks,
 * and a policy is only the fields its algorithm reads: a batch of N requests is N keys and N short
 * arguments, which the client encodes and Redis reads in a fraction of the time of 3N. With `baked`
 * (a batch script with that policy written in: policyScript in scripts.ts), that policy is number 1
 * and is not sent; the policy count covers the others.
 */
export function scriptCall(
  script: Script,
  head: readonly string[],
  items: readonly ScriptItem[],
  compact = false,
  baked?: ResolvedPolicy,
): string[] {
  const argv = ['EVALSHA', script.sha, ''];
  for (const item of items) {
    if (compact && item.policy.blockMs === 0) argv.push(item.key);
    else argv.push(item.key, item.bkey);
  }
  argv[2] = String(argv.length - 3);
  for (const h of head) argv.push(h);
  const countAt = argv.push('') - 1;
  const policies: ResolvedPolicy[] = baked === undefined ? [] : [baked];
  for (const item of items) {
    let index = policies.indexOf(item.policy);
    if (index === -1) index = policies.push(item.policy) - 1;
    if (!compact) {
      for (const f of item.fields) argv.push(f);
      argv.push(String(index + 1));
    } else if (index === 0 && isUsual(item.fields)) {
      argv.push('1');
    } else {
      argv.push(`${item.fields.join(':')}:${index + 1}`);
    }
  }
  const sent = baked === undefined ? 0 : 1;
  argv[countAt] = String(policies.length - sent);
  const encode = compact ? batchPolicyArgs : policyArgs;
  for (let i = sent; i < policies.length; i++) for (const a of encode(policies[i] as ResolvedPolicy)) argv.push(a);
  return argv;
}

/** The usual item's fields: commit, cost 1. */
const isUsual = (fields: readonly string[]) => fields.length === 2 && fields[0] === '1' && fields[1] === '1';
