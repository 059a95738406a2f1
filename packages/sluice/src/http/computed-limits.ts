/**
 * The plan of a middleware with limits computed from the request: each request's limits are resolved, and a limiter
 * made for each distinct set, cached by its signature, so a policy is validated once and not on every request.
 */

import { optionError } from '../core/errors.js';
import { checkMissingKey } from './keys.js';
import {
  checkLimitFields,
  DEFAULT_KEY,
  type Entry,
  pathOf,
  pickPolicy,
  type Resolved,
  validate,
} from './limit-entries.js';
import { EMPTY_SET, type LimitPlan, type LimitSet } from './limit-types.js';
import type { HttpLimitSpec, HttpPolicy } from './options.js';
import type { Awaitable, HttpRequestInfo } from './request.js';

/** Distinct computed sets kept; past it the cache starts over (counters live in the store, not here). */
const SET_CACHE_LIMIT = 1000;

/**
 * The plan of limits that depend on the request: resolved per request, a limiter built by `build` for
 * each distinct set (validated then) and cached by the set's signature.
 */
export function computedPlan<Req>(
  entries: readonly Entry<Req>[],
  build: (resolved: readonly Resolved<Req>[]) => LimitSet<Req>,
  defaultAlgorithm: string | undefined,
): LimitPlan<Req> {
  const cache = new Map<string, LimitSet<Req>>();
  const fromResolved = (resolved: Resolved<Req>[]): LimitSet<Req> => {
    // Every computed limit returned null: nothing applies, and there is no limiter to ask.
    if (resolved.length === 0) return EMPTY_SET;
    const signature = resolved.map(signatureOf).join('\n');
    let set = cache.get(signature);
    if (set === undefined) {
      for (const r of resolved) validate(r.policy, pathOf(r.index));
      set = build(resolved);
      if (cache.size >= SET_CACHE_LIMIT) cache.clear();
      cache.set(signature, set);
    }
    return set;
  };

  return {
    fixed: undefined,
    sets: () => cache.values(),
    resolve(req, info) {
      const parts = entries.map((e) => resolveEntry(e, req, info, defaultAlgorithm));
      if (parts.some((p) => p instanceof Promise)) {
        return Promise.all(parts).then((ps) => fromResolved(ps.filter(isResolved)));
      }
      return fromResolved((parts as (Resolved<Req> | undefined)[]).filter(isResolved));
    },
  };
}

function isResolved<Req>(r: Resolved<Req> | undefined): r is Resolved<Req> {
  return r !== undefined;
}

function signatureOf<Req>(r: Resolved<Req>): string {
  const p = r.policy;
  return `${r.name}|${p.algorithm ?? ''}|${p.limit}|${p.period}|${p.burst ?? ''}|${p.blockDuration ?? ''}`;
}

function resolveEntry<Req>(
  e: Entry<Req>,
  req: Req,
  info: HttpRequestInfo,
  defaultAlgorithm: string | undefined,
): Awaitable<Resolved<Req> | undefined> {
  switch (e.kind) {
    case 'static':
      return e;
    case 'limit-fn': {
      const limit = e.limit(req, info);
      const make = (n: number): Resolved<Req> => ({ ...e, policy: { ...e.policy, limit: n } });
      return limit instanceof Promise ? limit.then(make) : make(limit);
    }
    case 'entry-fn': {
      const spec = e.fn(req, info);
      const make = (s: HttpLimitSpec | null | undefined) => resolveSpec<Req>(s, e.index, defaultAlgorithm);
      return spec instanceof Promise ? spec.then(make) : make(spec);
    }
  }
}

/** What a function in `limits[index]` returned, checked: a limit, or undefined (null: it does not apply). */
function resolveSpec<Req>(
  spec: HttpLimitSpec | null | undefined,
  index: number,
  defaultAlgorithm: string | undefined,
): Resolved<Req> | undefined {
  if (spec === null || spec === undefined) return undefined;
  const path = `limits[${index}]`;
  if (typeof spec !== 'object')
    throw optionError(path, `the function returned ${typeof spec}; return a limit ({ limit, period, … }) or null`);
  checkLimitFields(spec, path);
  const { name = `limit${index}`, key, missingKey } = spec;
  if (key !== undefined && key !== null && typeof key !== 'string' && typeof key !== 'number')
    throw optionError(`${path}.key`, 'expected a string, a number or null', 'ERR_SLUICE_INVALID_KEY');
  const missing = checkMissingKey(missingKey, `${path}.missingKey`);
  return {
    name,
    policy: pickPolicy(spec, defaultAlgorithm) as HttpPolicy,
    key: key === undefined ? DEFAULT_KEY : { kind: 'fixed', key },
    index,
    ...(missing === undefined ? {} : { missing }),
  };
}
