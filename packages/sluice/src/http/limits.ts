/**
 * The limits of a middleware, compiled once: fixed limits become one limiter up front, and limits computed from the
 * request get limiters cached by their policy, so no request validates a policy again.
 */
import { computedPlan } from './computed-limits.js';
import { entriesOf, type Resolved } from './limit-entries.js';
import { createSetBuilder } from './limit-set-builder.js';
import type { LimitPlan, PlanContext } from './limit-types.js';
import type { RateLimitOptions } from './options.js';

/**
 * Compiles the limit options once: fixed limits become one limiter now; limits that are functions of
 * the request are resolved per request and their limiters cached by signature, so a policy is
 * validated once, not on every request.
 */
export function compileLimits<Req>(options: RateLimitOptions<Req>, context: PlanContext): LimitPlan<Req> {
  const single = options.limits === undefined;
  const defaultAlgorithm = context.shape ? 'leaky-bucket' : undefined;
  const entries = entriesOf(options, defaultAlgorithm);
  const build = createSetBuilder(options, context, single);
  if (entries.every((e) => e.kind === 'static')) {
    const fixed = build(entries as Resolved<Req>[]);
    return { fixed, resolve: () => fixed, sets: () => [fixed] };
  }
  return computedPlan(entries, build, defaultAlgorithm);
}

export type { KeySource, LimitPlan, LimitSet, PlanContext, SetLimit } from './limit-types.js';
export { isEmptySet, NO_PLAN } from './limit-types.js';
