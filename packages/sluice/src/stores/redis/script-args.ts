import type { ResolvedPolicy } from '../../core/policy.js';
import { policyArgs } from './scripts.js';

/** One item of a script call: its two keys, its policy and its own ARGV fields (before the policy index). */
export interface ScriptItem {
  readonly key: string;
  readonly bkey: string;
  readonly policy: ResolvedPolicy;
  readonly fields: readonly string[];
}

/**
 * KEYS and ARGV of a script call (layout in lua.ts): `head`, the policy count, per item its fields and
 * the 1-based index of its policy, then each distinct policy once (8 fields). With `compact` (the batch
 * script), an item's fields and index are one argument, 'fields:…:index', and the usual item — fields
 * ['1', '1'] (commit, cost 1) with the first policy — is just '1': a batch of N requests is 2N keys
 * and N short arguments, which the client encodes and Redis reads in a fraction of the time of 3N.
 */
export function scriptArgs(
  head: readonly string[],
  items: readonly ScriptItem[],
  compact = false,
): { keys: string[]; args: string[] } {
  const policies: ResolvedPolicy[] = [];
  const keys: string[] = [];
  const args: string[] = [...head, ''];
  for (const item of items) {
    let index = policies.indexOf(item.policy);
    if (index === -1) index = policies.push(item.policy) - 1;
    keys.push(item.key, item.bkey);
    if (!compact) {
      for (const f of item.fields) args.push(f);
      args.push(String(index + 1));
    } else if (index === 0 && item.fields.length === 2 && item.fields[0] === '1' && item.fields[1] === '1') {
      args.push('1');
    } else {
      args.push(`${item.fields.join(':')}:${index + 1}`);
    }
  }
  args[head.length] = String(policies.length);
  for (const p of policies) for (const a of policyArgs(p)) args.push(a);
  return { keys, args };
}
