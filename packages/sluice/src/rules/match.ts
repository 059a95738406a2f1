/**
 * Matching a request descriptor to its rule, walking the descriptor tree as envoy ratelimit does: an exact value beats
 * a wildcard beats a bare key, and the walk must end at the descriptor's last entry.
 */
import { encodePart } from './parse/parse-descriptors.js';
import type { DescriptorNode, DomainRules } from './types.js';

/** A request descriptor matched to a rule. */
export interface RuleMatch {
  readonly node: DescriptorNode;
  /** The store key of this descriptor's counters: its entries, with shared wildcard values folded. */
  readonly key: string;
}

/**
 * Finds the rule for one request descriptor, as envoy ratelimit does: walking the tree one entry at a
 * time, at each level an exact `key`+`value` beats a wildcard value (the first in config order) beats a
 * bare `key`; the walk stops where the tree does. A rule applies only when the walk ends exactly at the
 * descriptor's last entry (depth must match). Returns undefined when nothing applies.
 */
export function matchDescriptor(
  rules: DomainRules,
  entries: readonly { key: string; value: string }[],
): RuleMatch | undefined {
  let level = rules.root;
  // The key is built as the walk goes (no array of parts, no iterator): this runs for every descriptor.
  let key = '';
  const last = entries.length - 1;
  for (let i = 0; i <= last; i++) {
    const entry = entries[i] as { key: string; value: string };
    let node = level.exact.get(entry.key)?.get(entry.value);
    let viaWildcard = false;
    if (node === undefined) {
      for (const w of level.wildcards) {
        if (w.key === entry.key && w.wildcard?.test(entry.value)) {
          node = w;
          viaWildcard = true;
          break;
        }
      }
    }
    node ??= level.bare.get(entry.key);
    if (node === undefined) return undefined;
    // share_threshold: every value matching the wildcard counts under the pattern itself.
    const value = viaWildcard && node.shareThreshold ? (node.value as string) : entry.value;
    const part = `${encodePart(entry.key)}=${encodePart(value)}`;
    key = i === 0 ? part : `${key}/${part}`;
    if (i === last) return { node, key };
    if (node.children.all.length === 0) return undefined;
    level = node.children;
  }
  return undefined;
}

/** The store key of a descriptor's entries as sent (for limit overrides). */
export function entriesKey(entries: readonly { key: string; value: string }[]): string {
  return entries.map((e) => `${encodePart(e.key)}=${encodePart(e.value)}`).join('/');
}
