/**
 * Builds the set of a middleware's limits once their policies are known: one limiter over all of them (one atomic
 * store step per request) and each limit's header facts and key source.
 */
import type { PolicyOptions } from '../core/policy.js';
import { createCheckingLimiter } from '../limiter/create-limiter.js';
import type { LimiterOptions, LimitOptions } from '../limiter/options.js';
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
  const scope = options.name;
  const missingDefault = checkMissingKey(options.missingKey, 'missingKey') ?? 'ip';
  return (resolved) => {
    const base: LimiterOptions = { store: context.store };
    if (context.clock !== undefined) base.clock = context.clock;
    if (scope !== undefined) base.name = scope;
    // Passed only when set, so a limiter without a failure policy is created exactly as before.
    const passthrough = base as Record<string, unknown>;
    if (options.fail !== undefined) passthrough.fail = options.fail;
    if (options.insuranceShare !== undefined) passthrough.insuranceShare = options.insuranceShare;
    const limiter = single
      ? createCheckingLimiter({ ...base, ...(resolved[0]?.policy as PolicyOptions) })
      : createCheckingLimiter({ ...base, limits: resolved.map((r): LimitOptions => ({ name: r.name, ...r.policy })) });
    const limits = resolved.map((r, i) => {
      const policy = limiter.limits[i]?.policy;
      return {
        name: r.name,
        header: limitHeaderInfo(
          r.name,
          policy?.periodMs ?? 1000,
          policy?.limit ?? 0,
          'name',
          policy === undefined ? undefined : { algorithm: policy.algorithm, capacity: policy.capacity },
        ),
        key: r.key,
        missing: r.missing ?? missingDefault,
        keyOption: r.key.kind === 'default' || r.index < 0 ? 'key' : `limits[${r.index}].key`,
      };
    });
    return { limiter, limits, single };
  };
}
