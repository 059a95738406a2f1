/**
 * The rules of a RuleSet listed flat for a dashboard: every limited, unlimited or allow-listed descriptor, in domain
 * and config order.
 */
import type { LimitDescription, RuleDescription } from './engine-types.js';
import type { DescriptorLevel, DescriptorNode, RuleSet } from './types.js';

/**
 * Lists the rules of a RuleSet for a dashboard: every descriptor with a limit, an `unlimited` rule, or
 * an allow-listed key/value (no limit, no children), in domain and config order.
 * @example for (const r of describeRules(ruleSet)) console.log(r.domain, r.descriptor, r.limits);
 */
export function describeRules(ruleSet: RuleSet): RuleDescription[] {
  const out: RuleDescription[] = [];
  for (const rules of ruleSet.domains.values()) walk(rules.domain, rules.root, out);
  return out;
}

function walk(domain: string, level: DescriptorLevel, out: RuleDescription[]): void {
  for (const node of level.all) {
    const allowListed = node.limits.length === 0 && !node.unlimited && node.children.all.length === 0;
    if (node.limits.length > 0 || node.unlimited || allowListed) out.push(describe(domain, node, allowListed));
    walk(domain, node.children, out);
  }
}

function describe(domain: string, node: DescriptorNode, allowListed: boolean): RuleDescription {
  const limits = node.limits.map(
    (l): LimitDescription => ({
      ...(l.name === undefined ? {} : { name: l.name }),
      requestsPerUnit: l.requestsPerUnit,
      ...(l.unit === undefined ? {} : { unit: l.unit }),
      periodMs: l.periodMs,
      algorithm: l.algorithm,
      ...(l.burst === undefined ? {} : { burst: l.burst }),
      replaces: [...l.replaces],
    }),
  );
  const name = node.limits[0]?.name ?? node.unlimitedName;
  return {
    id: node.id,
    domain,
    descriptor: node.path.map((e) => (e.value === undefined ? e.key : `${e.key}=${e.value}`)).join('/'),
    path: node.path.map((e) => ({ ...e })),
    limits,
    unlimited: node.unlimited,
    allowListed,
    shadow: node.shadow,
    ...(name === undefined ? {} : { name }),
    ...(node.fail === undefined ? {} : { fail: node.fail }),
    detailedMetric: node.detailedMetric,
    shareThreshold: node.shareThreshold,
    file: node.file,
    line: node.line,
  };
}
