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
 * KEYS and ARGV of a script call (layout in lua.ts): `head`, the policy count, each distinct policy once
 * (8 fields), then per item its fields and the 1-based index of its policy.
 */
export function scriptArgs(head: readonly string[], items: readonly ScriptItem[]): { keys: string[]; args: string[] } {
  const policies: ResolvedPolicy[] = [];
  const keys: string[] = [];
  const tail: string[] = [];
  for (const item of items) {
    let index = policies.indexOf(item.policy);
    if (index === -1) index = policies.push(item.policy) - 1;
    keys.push(item.key, item.bkey);
    for (const f of item.fields) tail.push(f);
    tail.push(String(index + 1));
  }
  const args = [...head, String(policies.length)];
  for (const p of policies) for (const a of policyArgs(p)) args.push(a);
  for (const a of tail) args.push(a);
  return { keys, args };
}
