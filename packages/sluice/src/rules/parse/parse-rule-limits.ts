/**
 * A descriptor's `rate_limit` or `rate_limits`: its limits in counter slots (a single rate_limit is slot 0, the same
 * as the first item of rate_limits, so turning one into the other keeps the counters), `unlimited` and `replaces`.
 */
import { RULE_ISSUE_CODES as C } from '../codes.js';
import type { RuleLimit } from '../types.js';
import { parseLimit, RATE_LIMIT_FIELDS, RATE_LIMITS_ITEM_FIELDS } from './parse-limit.js';
import type { Reader } from './reader.js';

/** A rule's limits as parsed. */
export interface RuleLimits {
  limits: RuleLimit[];
  unlimited: boolean;
  unlimitedName: string | undefined;
  replaces: string[];
}

/** Parses the limits of the descriptor whose fields are `f` (`p` names a field's path, `id` is the rule's). */
export function parseRuleLimits(
  r: Reader,
  f: ReturnType<Reader['fields']> & object,
  p: (name: string) => string,
  id: string,
): RuleLimits {
  const single = f.get('rate_limit');
  const several = f.get('rate_limits');
  if (single && several) {
    r.report(C.conflictingFields, `${p('rate_limits')}: give either rate_limit or rate_limits, not both`, several.at);
  }
  const out: RuleLimits = { limits: [], unlimited: false, unlimitedName: undefined, replaces: [] };
  if (single && single.value !== undefined) {
    const parsed = parseLimit(r, single.value, single.at, p('rate_limit'), RATE_LIMIT_FIELDS, id, '0');
    if (parsed.limit) out.limits.push(parsed.limit);
    out.unlimited = parsed.unlimited;
    if (parsed.unlimited) out.unlimitedName = parsed.name;
    out.replaces.push(...parsed.replaces);
  } else if (several && !single) {
    const list = r.list(several, p('rate_limits')) ?? [];
    const names = new Set<string>();
    for (const [j, limitItem] of list.entries()) {
      const limitPath = `${p('rate_limits')}[${j}]`;
      const parsed = parseLimit(r, limitItem.node, limitItem.at, limitPath, RATE_LIMITS_ITEM_FIELDS, id, String(j));
      if (parsed.name !== undefined) {
        if (names.has(parsed.name)) {
          r.report(C.conflictingFields, `${limitPath}.name: '${parsed.name}' is used twice in this rule`, limitItem.at);
        }
        names.add(parsed.name);
      }
      if (parsed.limit) out.limits.push(parsed.limit);
      out.replaces.push(...parsed.replaces);
    }
  }
  return out;
}
