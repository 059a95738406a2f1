/**
 * Builds the set of a middleware's limits once their policies are known: one limiter over all of them (one atomic
 * store step per request) and each limit's header facts and key source.
 */
import type { PolicyOptions } from '../core/policy.js';
import { createCheckingLimiter } from '../limiter/create-limiter.js';
import type { LimiterOptions, LimitOptions, ResolvedLimit } from '../limiter/options.js';
import { limitHeaderInfo } from './headers.js';
import { checkMissingKey } from './keys.js';
import type { Resolved } from './limit-entries.js';
import type { LimitSet, PlanContext } from './limit-types.js';
import type { RateLimitOptions } from './options.js';

/** Creates the builder of a middleware's limit sets; `single` for an inline limit (a plain string key). */
export function createSetBuilder<Req>(
  options: RateLimitOptions<Req>,
  context: PlanContext,
  single: boolean,
): (resolved: readonly Resolved<Req>[]) => LimitSet<Req> {
  const missingDefault = checkMissingKey(options.missingKey, 'missingKey') ?? 'ip';
  // Each option passed only when set, so a limiter without a failure policy is created exactly as before.
  const base: Record<string, unknown> = { store: context.store };
  if (context.clock !== undefined) base.clock = context.clock;
  for (const name of ['name', 'fail', 'insuranceShare'] as const)
    if (options[name] !== undefined) base[name] = options[name];
  return (resolved) => {
    const limiter = single
      ? createCheckingLimiter({ ...base, ...(resolved[0]?.policy as PolicyOptions) } as LimiterOptions)
      : createCheckingLimiter({
          ...base,
          limits: resolved.map((r): LimitOptions => ({ name: r.name, ...r.policy })),
        } as LimiterOptions);
    const limits = resolved.map((r, i) => {
      // The limiter's own reading of the policy: the header states its bucket size and the window that refills it.
      const policy = (limiter.limits[i] as ResolvedLimit).policy;
      return {
        name: r.name,
        header: limitHeaderInfo(r.name, policy.periodMs, policy.limit, 'name', policy),
        key: r.key,
        missing: r.missing ?? missingDefault,
        keyOption: r.key.kind === 'default' || r.index < 0 ? 'key' : `limits[${r.index}].key`,
      };
    });
    return { limiter, limits, single };
  };
}
