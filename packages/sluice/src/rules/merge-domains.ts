/**
 * Merging several files of one domain into one, as envoy ratelimit's `MERGE_DOMAIN_CONFIG` does; a top-level descriptor
 * defined in two of them is reported as a duplicate.
 */
import { RULE_ISSUE_CODES as C } from './codes.js';
import { mergeGatewayPriorities } from './parse/parse-priorities.js';
import type { DescriptorLevel, DescriptorNode, DomainRules, RuleIssue } from './types.js';

/** Where merge problems go (an `IssueList`). */
interface IssueSink {
  add(issue: RuleIssue): void;
}

/**
 * Adds the top-level descriptors of `next` (another file of the same domain) to `base`, as envoy
 * ratelimit's `MERGE_DOMAIN_CONFIG` does: a key/value already defined at the top level is a duplicate
 * and reported at its place in `next`; everything else (nested levels included) is taken as written.
 */
export function mergeDomain(base: DomainRules, next: DomainRules, issues: IssueSink): DomainRules {
  const exact = new Map<string, Map<string, DescriptorNode>>();
  for (const [key, byValue] of base.root.exact) exact.set(key, new Map(byValue));
  const bare = new Map(base.root.bare);
  const wildcards = [...base.root.wildcards];
  const all = [...base.root.all];
  for (const node of next.root.all) {
    const taken =
      node.value === undefined ? bare.has(node.key) : all.some((n) => n.key === node.key && n.value === node.value);
    if (taken) {
      issues.add({
        code: C.duplicateDescriptor,
        message: `duplicate descriptor ${node.value === undefined ? `key '${node.key}'` : `'${node.key}' = '${node.value}'`} at the top level of domain '${base.domain}' (also in ${base.file})`,
        file: node.file,
        line: node.line,
        column: node.column,
      });
      continue;
    }
    all.push(node);
    if (node.value === undefined) bare.set(node.key, node);
    else if (node.wildcard) wildcards.push(node);
    else {
      let byValue = exact.get(node.key);
      if (byValue === undefined) {
        byValue = new Map();
        exact.set(node.key, byValue);
      }
      byValue.set(node.value, node);
    }
  }
  const root: DescriptorLevel = { exact, wildcards, bare, all };
  // The gateway's priority routes of both files count (they were dropped before), one file names the priorities.
  return { ...base, root, http: [...base.http, ...next.http], ...mergeGatewayPriorities(base, next, issues) };
}
