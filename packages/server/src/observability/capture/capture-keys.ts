/**
 * What a capture keeps of a descriptor value: values the rules name (`value: premium`, not a secret, and needed
 * for a replay to match the same rules) as they are; every other value as a keyed hash (`#` and 20 hex digits,
 * an HMAC with the server's secret over the domain, the entry's key and the value) unless raw keys are asked for.
 */
import { createHmac, randomBytes } from 'node:crypto';
import type { DescriptorLevel, RuleSet } from 'sluice/rules';

/** Maps a value of `key` in `domain` to what the capture writes. */
export type ValueMasker = (ruleSet: RuleSet, domain: string, key: string, value: string) => string;

/** Most hashed values remembered; past it the cache starts afresh. */
const CACHE_SIZE = 8192;

function collect(level: DescriptorLevel, domain: string, into: Set<string>): void {
  for (const [key, values] of level.exact) {
    for (const [value, node] of values) {
      into.add(`${domain}\u0000${key}\u0000${value}`);
      collect(node.children, domain, into);
    }
  }
  for (const node of level.wildcards) collect(node.children, domain, into);
  for (const node of level.bare.values()) collect(node.children, domain, into);
}

const literalsByRuleSet = new WeakMap<RuleSet, Set<string>>();

/** The `domain\0key\0value` of every exact value the rules name (computed once per rule set). */
export function literalValues(ruleSet: RuleSet): Set<string> {
  let literals = literalsByRuleSet.get(ruleSet);
  if (literals === undefined) {
    literals = new Set();
    for (const [domain, rules] of ruleSet.domains) collect(rules.root, domain, literals);
    literalsByRuleSet.set(ruleSet, literals);
  }
  return literals;
}

/** A masker with `secret` (default: random, new in each process). */
export function createValueMasker(secret: string | Uint8Array = randomBytes(32)): ValueMasker {
  const cache = new Map<string, string>();
  return (ruleSet, domain, key, value) => {
    const id = `${domain}\u0000${key}\u0000${value}`;
    if (literalValues(ruleSet).has(id)) return value;
    let masked = cache.get(id);
    if (masked === undefined) {
      // Lengths first, so no two (domain, key, value) tuples hash the same text.
      const text = `${domain.length}:${key.length}:${domain}${key}${value}`;
      masked = `#${createHmac('sha256', secret).update(text).digest('hex').slice(0, 20)}`;
      if (cache.size >= CACHE_SIZE) cache.clear();
      cache.set(id, masked);
    }
    return masked;
  };
}
