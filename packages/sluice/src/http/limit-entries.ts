/**
 * The limit options of a middleware read into entries: an inline limit or each of `limits`, with its policy, name and
 * key source, validated with the option path the user wrote; limits that are functions of the request stay functions.
 */
import { isSluiceError, SluiceError } from '../core/errors.js';
import { type PolicyOptions, resolvePolicy } from '../core/policy.js';
import { limitHeaderInfo } from './headers.js';
import { checkMissingKey, type MissingKey } from './keys.js';
import type { KeySource } from './limit-types.js';
import type { HttpLimit, HttpLimitSpec, HttpPolicy, RateLimitOptions } from './options.js';
import type { RequestFn } from './request.js';

/** The policy fields of a limit (inline, in `limits`, or returned by a function). */
export const POLICY_FIELDS = ['algorithm', 'limit', 'period', 'burst', 'blockDuration'] as const;

/** A limit option, compiled: fixed, with a limit computed per request, or computed whole per request. */
export type Entry<Req> =
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

/** A limit resolved for a request: its whole policy known. */
export type Resolved<Req> = {
  name: string;
  policy: HttpPolicy;
  key: KeySource<Req>;
  missing?: MissingKey;
  index: number;
};

/** The name of an entry (a function's is its index's default). */
export function nameOf<Req>(e: Entry<Req>): string {
  return e.kind === 'entry-fn' ? `limit${e.index}` : e.name;
}

/** The policy fields of a limit (`limit` only when it is a number); the default algorithm filled in. */
export function pickPolicy(
  source: Partial<HttpPolicy> | RateLimitOptions<never>,
  defaultAlgorithm: string | undefined,
) {
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

/** One element of `limits`, checked. */
export function compileEntry<Req>(
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

/** Validates a policy as the limiter will, with the option path the user wrote. */
export function validate(policy: HttpPolicy, path: string): void {
  try {
    resolvePolicy(policy as PolicyOptions, path);
  } catch (error) {
    if (isSluiceError(error)) throw error;
    throw new SluiceError('ERR_SLUICE_INVALID_OPTION', `${path || 'limit'}: ${String(error)}`);
  }
}

/**
 * The entries of a middleware's limit options, checked with the option path the user wrote: the inline
 * limit, or each of `limits` (never both, names distinct).
 */
export function entriesOf<Req>(options: RateLimitOptions<Req>, defaultAlgorithm: string | undefined): Entry<Req>[] {
  const inline = POLICY_FIELDS.filter((f) => options[f] !== undefined);
  const entries =
    options.limits === undefined
      ? [inlineEntry(options, inline, defaultAlgorithm)]
      : listEntries(options.limits, inline, defaultAlgorithm);
  const single = options.limits === undefined;
  // Validate what is known now, with the option path the user wrote.
  for (const [i, e] of entries.entries()) {
    const path = single ? '' : `limits[${i}].`;
    if (e.kind === 'static') validate(e.policy, path);
    if (e.kind === 'limit-fn') validate({ ...e.policy, limit: 1 } as HttpPolicy, path);
    if (e.kind !== 'entry-fn') limitHeaderInfo(e.name, 1, 1, single ? 'name' : `${path}name`);
  }
  return entries;
}

function inlineEntry<Req>(
  options: RateLimitOptions<Req>,
  inline: readonly string[],
  defaultAlgorithm: string | undefined,
): Entry<Req> {
  if (inline.length === 0) {
    throw new SluiceError(
      'ERR_SLUICE_INVALID_OPTION',
      "limit: give a limit inline ({ limit: 100, period: '1m' }) or several under limits: [...]",
      { option: 'limit' },
    );
  }
  const policy = pickPolicy(options, defaultAlgorithm);
  const name = options.name ?? 'default';
  return typeof options.limit === 'function'
    ? { kind: 'limit-fn', name, policy, limit: options.limit, key: { kind: 'default' }, index: -1 }
    : { kind: 'static', name, policy: policy as HttpPolicy, key: { kind: 'default' }, index: -1 };
}

function listEntries<Req>(
  limits: RateLimitOptions<Req>['limits'],
  inline: readonly string[],
  defaultAlgorithm: string | undefined,
): Entry<Req>[] {
  if (inline.length > 0) {
    throw new SluiceError(
      'ERR_SLUICE_INVALID_OPTION',
      `limits: give either limits: [...] or an inline limit, not both (found ${inline.join(', ')})`,
      { option: 'limits' },
    );
  }
  if (!Array.isArray(limits) || limits.length === 0) {
    throw new SluiceError('ERR_SLUICE_INVALID_OPTION', 'limits: expected a non-empty array of limits', {
      option: 'limits',
    });
  }
  const entries = limits.map((entry, i) => compileEntry<Req>(entry, i, defaultAlgorithm));
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
  return entries;
}
