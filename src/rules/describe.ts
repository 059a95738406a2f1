import type { RuleDescription } from './engine-types.js';
import type { RuleSet } from './types.js';

/** Lists every rule of a RuleSet, for dashboards (work in progress). */
export function describeRules(_ruleSet: RuleSet): RuleDescription[] {
  return [];
}
