/**
 * How a request descriptor met the rule tree, for explain: each level's step (an exact value, a wildcard, a bare key)
 * or where the walk stopped and why.
 */
import { matchDescriptor } from './match.js';
import type { DescriptorNode, DomainRules } from './types.js';

/** One level of the walk: the request's entry and the rule entry it met. */
export interface MatchStep {
  readonly key: string;
  readonly value: string;
  /** `exact`: key and value; `wildcard`: a `*` pattern; `key`: a rule with a key and no value. */
  readonly matchedBy: 'exact' | 'wildcard' | 'key';
  /** The rule's entry as written (`key`, `key=value` or `key=pattern*`). */
  readonly rule: string;
}

/** The walk of one descriptor through its domain's rules. */
export interface MatchTrace {
  /** The matched rule, when the walk ended exactly at the descriptor's last entry. */
  readonly node?: DescriptorNode;
  /** The levels walked (the whole path when matched; the matching prefix otherwise). */
  readonly steps: readonly MatchStep[];
  /** Why no rule applies (absent when one does). */
  readonly why?: string;
}

/**
 * Traces one descriptor's match as envoy ratelimit walks it. The match itself is `matchDescriptor`'s
 * (the engine's); the steps are read back from the matched rule's path, and a miss is located by the
 * longest prefix of entries that still meets a rule.
 */
export function traceMatch(rules: DomainRules, entries: readonly { key: string; value: string }[]): MatchTrace {
  const match = matchDescriptor(rules, entries);
  if (match !== undefined) return { node: match.node, steps: stepsOf(match.node, entries) };
  for (let depth = entries.length - 1; depth >= 1; depth--) {
    const prefix = matchDescriptor(rules, entries.slice(0, depth));
    if (prefix === undefined) continue;
    const next = entries[depth] as { key: string; value: string };
    const why =
      prefix.node.children.all.length === 0
        ? `the rule ${ruleText(prefix.node)} has no nested descriptors, so ${entries.length} entries cannot end on a rule`
        : `no rule under ${ruleText(prefix.node)} matches ${next.key}=${next.value}`;
    return { steps: stepsOf(prefix.node, entries), why };
  }
  const first = entries[0];
  return {
    steps: [],
    why:
      first === undefined ? 'the descriptor has no entries' : `no top-level rule matches ${first.key}=${first.value}`,
  };
}

function stepsOf(node: DescriptorNode, entries: readonly { key: string; value: string }[]): MatchStep[] {
  return node.path.map((rule, i) => {
    const entry = entries[i] as { key: string; value: string };
    const matchedBy = rule.value === undefined ? 'key' : rule.value === entry.value ? 'exact' : 'wildcard';
    return {
      key: entry.key,
      value: entry.value,
      matchedBy,
      rule: rule.value === undefined ? rule.key : `${rule.key}=${rule.value}`,
    };
  });
}

/** A rule's path as written in the config: `key=value/key2`. */
export function ruleText(node: DescriptorNode): string {
  return node.path.map((e) => (e.value === undefined ? e.key : `${e.key}=${e.value}`)).join('/');
}
