/**
 * The limits of a middleware, compiled once: fixed limits become one limiter up front, and limits computed from the
 * request get limiters cached by their policy, so no request validates a policy again.
 */
import type { Clock } from '../core/clock.js';
import { isSluiceError, SluiceError } from '../core/errors.js';
import { type PolicyOptions, resolvePolicy } from '../core/policy.js';
import { createLimiter, type Limiter } from '../limiter/create-limiter.js';
import type { LimiterOptions, LimitOptions } from '../limiter/options.js';
import type { Store } from '../stores/store.js';
import { type LimitHeaderInfo, limitHeaderInfo } from './headers.js';
import { checkMissingKey, type MissingKey } from './keys.js';
import type { HttpLimit, HttpLimitSpec, HttpPolicy, RateLimitOptions } from './options.js';
import type { Awaitable, HttpRequestInfo, RequestFn } from './request.js';

/** Where a limit's key comes from: the middleware's key, a function of the request, or fixed by a spec. */
export type KeySource<Req> =
  | { readonly kind: 'default' }
  | { readonly kind: 'fn'; readonly fn: RequestFn<Req, unknown> }
  | { readonly kind: 'fixed'; readonly key: string | number | null | undefined };

/** A limit of a resolved set: its name, header facts and key source, aligned with `limiter.limits`. */
export interface SetLimit<Req> {
  readonly name: string;
  readonly header: LimitHeaderInfo;
  readonly key: KeySource<Req>;
  /** What a missing key means for this limit. */
  readonly missing: MissingKey;
  /** The option that gave the key, for errors (`key`, `limits[1].key`). */
  readonly keyOption: string;
}

/** The limits that apply to a request, ready to check: one limiter (so one atomic store step). */
export interface LimitSet<Req> {
  readonly limiter: Limiter;
  readonly limits: readonly SetLimit<Req>[];
  /** True for an inline limit: the limiter takes a plain string key. */
  readonly single: boolean;
}

/** How a middleware finds the limits of a request. */
export interface LimitPlan<Req> {
  /** The set, when no limit depends on the request (the fast path: nothing to resolve). */
  readonly fixed: LimitSet<Req> | undefined;
  /** The set of a request whose limits depend on it. */
  resolve(req: Req, info: HttpRequestInfo): Awaitable<LimitSet<Req>>;
  /** Every set made so far (for resetKey and penalty, which act on every limit of the middleware). */
  sets(): Iterable<LimitSet<Req>>;
}

/** What the limiters of a plan share. */
export interface PlanContext {
  readonly store: Store;
  readonly clock: Clock | undefined;
  readonly shape: boolean;
}

const POLICY_FIELDS = ['algorithm', 'limit', 'period', 'burst', 'blockDuration'] as const;
const EXTRA_FIELDS = new Set(['name', 'key', 'missingKey']);
/** Distinct computed sets kept; past it the cache starts over (counters live in the store, not here). */
const SET_CACHE_LIMIT = 1000;

type Entry<Req> =
  | { kind: 'static'; name: string; policy: HttpPolicy; key: KeySource<Req>; missing?: MissingKey; index: number }
  | {
      kind: 'limit-fn';
      name: string;
      policy: Omit<HttpPolicy, 'limit'>;
      limit: RequestFn<Req, number>;
      key: KeySource<Req>;
      missing?: MissingKey;
      index: number;
    }
  | { kind: 'entry-fn'; index: number; fn: RequestFn<Req, HttpLimitSpec | null | undefined> };

type Resolved<Req> = { name: string; policy: HttpPolicy; key: KeySource<Req>; missing?: MissingKey; index: number };

/**
 * Compiles the limit options once: fixed limits become one limiter now; limits that are functions of
 * the request are resolved per request and their limiters cached by signature, so a policy is
 * validated once, not on every request.
 */
export function compileLimits<Req>(options: RateLimitOptions<Req>, context: PlanContext): LimitPlan<Req> {
  const inline = POLICY_FIELDS.filter((f) => options[f] !== undefined);
  const single = options.limits === undefined;
  const defaultAlgorithm = context.shape ? 'leaky-bucket' : undefined;
  const scope = options.name;
  let entries: Entry<Req>[];
  if (single) {
    if (inline.length === 0) {
      throw new SluiceError(
        'ERR_SLUICE_INVALID_OPTION',
        "limit: give a limit inline ({ limit: 100, period: '1m' }) or several under limits: [...]",
        { option: 'limit' },
      );
    }
    const policy = pickPolicy(options, defaultAlgorithm);
    const name = options.name ?? 'default';
    entries = [
      typeof options.limit === 'function'
        ? { kind: 'limit-fn', name, policy, limit: options.limit, key: { kind: 'default' }, index: -1 }
        : { kind: 'static', name, policy: policy as HttpPolicy, key: { kind: 'default' }, index: -1 },
    ];
  } else {
    if (inline.length > 0) {
      throw new SluiceError(
        'ERR_SLUICE_INVALID_OPTION',
        `limits: give either limits: [...] or an inline limit, not both (found ${inline.join(', ')})`,
        { option: 'limits' },
      );
    }
    if (!Array.isArray(options.limits) || options.limits.length === 0) {
      throw new SluiceError('ERR_SLUICE_INVALID_OPTION', 'limits: expected a non-empty array of limits', {
        option: 'limits',
      });
    }
    entries = options.limits.map((entry, i) => compileEntry(entry, i, defaultAlgorithm));
    const names = new Set<string>();
    for (const [i, e] of entries.entries()) {
      if (e.kind === 'entry-fn') continue;
      if (names.has(e.name)) {
        throw new SluiceError('ERR_SLUICE_INVALID_OPTION', `limits[${i}].name: '${e.name}' is used twice`, {
          option: `limits[${i}].name`,
        });
      }
      names.add(e.name);
    }
  }
  // Validate what is known now, with the option path the user wrote.
  for (const [i, e] of entries.entries()) {
    const path = single ? '' : `limits[${i}].`;
    if (e.kind === 'static') validate(e.policy, path);
    if (e.kind === 'limit-fn') validate({ ...e.policy, limit: 1 } as HttpPolicy, path);
    if (e.kind !== 'entry-fn') limitHeaderInfo(e.name, 1, 1, single ? 'name' : `${path}name`);
  }

  const missingDefault = checkMissingKey(options.missingKey, 'missingKey') ?? 'ip';
  const build = (resolved: readonly Resolved<Req>[]): LimitSet<Req> => {
    const base: LimiterOptions = { store: context.store };
    if (context.clock !== undefined) base.clock = context.clock;
    if (scope !== undefined) base.name = scope;
    // Passed only when set, so a limiter without a failure policy is created exactly as before.
    const passthrough = base as Record<string, unknown>;
    if (options.fail !== undefined) passthrough.fail = options.fail;
    if (options.insuranceShare !== undefined) passthrough.insuranceShare = options.insuranceShare;
    const limiter = single
      ? createLimiter({ ...base, ...(resolved[0]?.policy as PolicyOptions) })
      : createLimiter({ ...base, limits: resolved.map((r): LimitOptions => ({ name: r.name, ...r.policy })) });
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

  if (entries.every((e) => e.kind === 'static')) {
    const fixed = build(entries as Resolved<Req>[]);
    return { fixed, resolve: () => fixed, sets: () => [fixed] };
  }

  const cache = new Map<string, LimitSet<Req>>();
  const fromResolved = (resolved: Resolved<Req>[]): LimitSet<Req> => {
    // Every computed limit returned null: nothing applies, and there is no limiter to ask.
    if (resolved.length === 0) return EMPTY_SET;
    const signature = resolved.map(signatureOf).join('\n');
    let set = cache.get(signature);
    if (set === undefined) {
      for (const r of resolved)
        validate(r.policy, single ? '' : `limits[${entries.findIndex((e) => nameOf(e) === r.name)}].`);
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

/** The set of a request no limit applies to: its limiter is never called (see `isEmptySet`). */
// biome-ignore lint/suspicious/noExplicitAny: a shared sentinel, valid for every request type
const EMPTY_SET: LimitSet<any> = { limiter: undefined as unknown as Limiter, limits: [], single: false };

/** The plan of a middleware whose limits come from rules: it is never asked. */
// biome-ignore lint/suspicious/noExplicitAny: a shared sentinel, valid for every request type
export const NO_PLAN: LimitPlan<any> = { fixed: undefined, resolve: () => EMPTY_SET, sets: () => [] };

/** True for the set of a request that no limit applies to. */
export function isEmptySet<Req>(set: LimitSet<Req>): boolean {
  return set === EMPTY_SET;
}

function isResolved<Req>(r: Resolved<Req> | undefined): r is Resolved<Req> {
  return r !== undefined;
}

function nameOf<Req>(e: Entry<Req>): string {
  return e.kind === 'entry-fn' ? `limit${e.index}` : e.name;
}

function signatureOf<Req>(r: Resolved<Req>): string {
  const p = r.policy;
  return `${r.name}|${p.algorithm ?? ''}|${p.limit}|${p.period}|${p.burst ?? ''}|${p.blockDuration ?? ''}`;
}

function pickPolicy(source: Partial<HttpPolicy> | RateLimitOptions<never>, defaultAlgorithm: string | undefined) {
  const policy: Record<string, unknown> = {};
  for (const f of POLICY_FIELDS) {
    const v = (source as Record<string, unknown>)[f];
    if (v !== undefined && f !== 'limit') policy[f] = v;
  }
  if (policy.algorithm === undefined && defaultAlgorithm !== undefined) policy.algorithm = defaultAlgorithm;
  const limit = (source as Record<string, unknown>).limit;
  if (typeof limit !== 'function' && limit !== undefined) policy.limit = limit;
  return policy as Omit<HttpPolicy, 'limit'> & { limit?: number };
}

function compileEntry<Req>(
  entry: HttpLimit<Req> | RequestFn<Req, HttpLimitSpec | null | undefined>,
  i: number,
  defaultAlgorithm: string | undefined,
): Entry<Req> {
  if (typeof entry === 'function') return { kind: 'entry-fn', index: i, fn: entry };
  if (entry === null || typeof entry !== 'object') {
    throw new SluiceError('ERR_SLUICE_INVALID_OPTION', `limits[${i}]: expected a limit object or a function`, {
      option: `limits[${i}]`,
    });
  }
  const known = new Set<string>([...POLICY_FIELDS, 'name', 'key', 'missingKey']);
  for (const k of Object.keys(entry)) {
    if (!known.has(k)) {
      throw new SluiceError(
        'ERR_SLUICE_UNKNOWN_OPTION',
        `limits[${i}].${k}: unknown option (known: ${[...known].join(', ')})`,
        { option: `limits[${i}].${k}` },
      );
    }
  }
  const name = entry.name ?? `limit${i}`;
  if (typeof name !== 'string' || name === '') {
    throw new SluiceError('ERR_SLUICE_INVALID_OPTION', `limits[${i}].name: expected a non-empty string`, {
      option: `limits[${i}].name`,
    });
  }
  if (entry.key !== undefined && typeof entry.key !== 'function') {
    throw new SluiceError('ERR_SLUICE_INVALID_OPTION', `limits[${i}].key: expected a function of the request`, {
      option: `limits[${i}].key`,
    });
  }
  const key: KeySource<Req> = entry.key === undefined ? { kind: 'default' } : { kind: 'fn', fn: entry.key };
  const missing = checkMissingKey(entry.missingKey, `limits[${i}].missingKey`);
  const policy = pickPolicy(entry, defaultAlgorithm);
  const common = { name, key, index: i, ...(missing === undefined ? {} : { missing }) };
  if (typeof entry.limit === 'function') return { kind: 'limit-fn', policy, limit: entry.limit, ...common };
  return { kind: 'static', policy: policy as HttpPolicy, ...common };
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
      const make = (s: HttpLimitSpec | null | undefined): Resolved<Req> | undefined => {
        if (s === null || s === undefined) return undefined;
        if (typeof s !== 'object') {
          throw new SluiceError(
            'ERR_SLUICE_INVALID_OPTION',
            `limits[${e.index}]: the function returned ${typeof s}; return a limit ({ limit, period, … }) or null`,
            { option: `limits[${e.index}]` },
          );
        }
        const { name = `limit${e.index}`, key, missingKey, ...rest } = s;
        const policy = pickPolicy(rest, defaultAlgorithm) as HttpPolicy;
        validateSpec(s, e.index);
        const missing = checkMissingKey(missingKey, `limits[${e.index}].missingKey`);
        return {
          name,
          policy,
          key: key === undefined ? { kind: 'default' } : { kind: 'fixed', key },
          index: e.index,
          ...(missing === undefined ? {} : { missing }),
        };
      };
      return spec instanceof Promise ? spec.then(make) : make(spec);
    }
  }
}

function validateSpec(spec: HttpLimitSpec, index: number): void {
  for (const k of Object.keys(spec)) {
    if (!(POLICY_FIELDS as readonly string[]).includes(k) && !EXTRA_FIELDS.has(k)) {
      throw new SluiceError('ERR_SLUICE_UNKNOWN_OPTION', `limits[${index}].${k}: unknown field in a computed limit`, {
        option: `limits[${index}].${k}`,
      });
    }
  }
  if (spec.key !== undefined && spec.key !== null && typeof spec.key !== 'string' && typeof spec.key !== 'number') {
    throw new SluiceError('ERR_SLUICE_INVALID_KEY', `limits[${index}].key: expected a string, a number or null`, {
      option: `limits[${index}].key`,
    });
  }
}

function validate(policy: HttpPolicy, path: string): void {
  try {
    resolvePolicy(policy as PolicyOptions, path);
  } catch (error) {
    if (isSluiceError(error)) throw error;
    throw new SluiceError('ERR_SLUICE_INVALID_OPTION', `${path || 'limit'}: ${String(error)}`);
  }
}
