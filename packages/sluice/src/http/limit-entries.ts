/**
 * The limit options of a middleware read into entries: an inline limit or each of `limits`, with its policy, name and
 * key source, validated with the option path the user wrote; limits that are functions of the request stay functions.
 */
import { isSluiceError, optionError, SluiceError } from '../core/errors.js';
import { type PolicyOptions, resolvePolicy } from '../core/policy.js';
import { limitHeaderInfo } from './headers.js';
import { checkMissingKey, type MissingKey } from './keys.js';
import type { KeySource } from './limit-types.js';
import type { HttpLimit, HttpLimitSpec, HttpPolicy, RateLimitOptions } from './options.js';
import type { RequestFn } from './request.js';

/** The policy fields of a limit (inline, in `limits`, or returned by a function). */
export const POLICY_FIELDS = ['algorithm', 'limit', 'period', 'burst', 'blockDuration'] as const;

/** Every field a limit object may have (in `limits`, or returned by a function there). */
const LIMIT_FIELDS: ReadonlySet<string> = new Set([...POLICY_FIELDS, 'name', 'key', 'missingKey']);

/** The key source of a limit without a key of its own: the middleware's. */
export const DEFAULT_KEY = { kind: 'default' } as const;

/** What every limit entry says besides its policy: its name, key source and position (-1: the inline limit). */
interface EntryCommon<Req> {
  name: string;
  key: KeySource<Req>;
  missing?: MissingKey;
  index: number;
}

/** A limit option, compiled: fixed, with a limit computed per request, or computed whole per request. */
export type Entry<Req> =
  | ({ kind: 'static'; policy: HttpPolicy } & EntryCommon<Req>)
  | ({ kind: 'limit-fn'; policy: Omit<HttpPolicy, 'limit'>; limit: RequestFn<Req, number> } & EntryCommon<Req>)
  | { kind: 'entry-fn'; index: number; fn: RequestFn<Req, HttpLimitSpec | null | undefined> };

/** A limit resolved for a request: its whole policy known. */
export type Resolved<Req> = { policy: HttpPolicy } & EntryCommon<Req>;

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

/** Rejects a field no limit object has, named with its path (`limits[1].windowMs`). */
export function checkLimitFields(spec: object, path: string): void {
  for (const k of Object.keys(spec)) {
    if (!LIMIT_FIELDS.has(k)) {
      throw optionError(
        `${path}.${k}`,
        `unknown option (known: ${[...LIMIT_FIELDS].join(', ')})`,
        'ERR_SLUICE_UNKNOWN_OPTION',
      );
    }
  }
}

/** The entry of a limit whose `limit` is a number (static) or a function of the request. */
function entryOf<Req>(limit: unknown, policy: Omit<HttpPolicy, 'limit'>, common: EntryCommon<Req>): Entry<Req> {
  return typeof limit === 'function'
    ? { kind: 'limit-fn', policy, limit: limit as RequestFn<Req, number>, ...common }
    : { kind: 'static', policy: policy as HttpPolicy, ...common };
}

/** One element of `limits`, checked. */
function compileEntry<Req>(
  entry: HttpLimit<Req> | RequestFn<Req, HttpLimitSpec | null | undefined>,
  i: number,
  defaultAlgorithm: string | undefined,
): Entry<Req> {
  if (typeof entry === 'function') return { kind: 'entry-fn', index: i, fn: entry };
  const path = `limits[${i}]`;
  if (entry === null || typeof entry !== 'object') throw optionError(path, 'expected a limit object or a function');
  checkLimitFields(entry, path);
  const name = entry.name ?? `limit${i}`;
  if (typeof name !== 'string' || name === '') throw optionError(`${path}.name`, 'expected a non-empty string');
  if (entry.key !== undefined && typeof entry.key !== 'function')
    throw optionError(`${path}.key`, 'expected a function of the request');
  const key: KeySource<Req> = entry.key === undefined ? DEFAULT_KEY : { kind: 'fn', fn: entry.key };
  const missing = checkMissingKey(entry.missingKey, `${path}.missingKey`);
  const common = { name, key, index: i, ...(missing === undefined ? {} : { missing }) };
  return entryOf(entry.limit, pickPolicy(entry, defaultAlgorithm), common);
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

/** The option path of a limit's fields in messages: `''` for the inline limit, else `limits[1].`. */
export const pathOf = (index: number): string => (index < 0 ? '' : `limits[${index}].`);

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
  // Validate what is known now, with the option path the user wrote.
  for (const e of entries) {
    if (e.kind === 'entry-fn') continue;
    const path = pathOf(e.index);
    validate(e.kind === 'static' ? e.policy : ({ ...e.policy, limit: 1 } as HttpPolicy), path);
    limitHeaderInfo(e.name, 1, 1, `${path}name`);
  }
  return entries;
}

function inlineEntry<Req>(
  options: RateLimitOptions<Req>,
  inline: readonly string[],
  defaultAlgorithm: string | undefined,
): Entry<Req> {
  if (inline.length === 0)
    throw optionError('limit', "give a limit inline ({ limit: 100, period: '1m' }) or several under limits: [...]");
  const common = { name: options.name ?? 'default', key: DEFAULT_KEY, index: -1 };
  return entryOf(options.limit, pickPolicy(options, defaultAlgorithm), common);
}

function listEntries<Req>(
  limits: RateLimitOptions<Req>['limits'],
  inline: readonly string[],
  defaultAlgorithm: string | undefined,
): Entry<Req>[] {
  if (inline.length > 0)
    throw optionError('limits', `give either limits: [...] or an inline limit, not both (found ${inline.join(', ')})`);
  if (!Array.isArray(limits) || limits.length === 0)
    throw optionError('limits', 'expected a non-empty array of limits');
  const entries = limits.map((entry, i) => compileEntry<Req>(entry, i, defaultAlgorithm));
  const names = new Set<string>();
  for (const e of entries) {
    if (e.kind === 'entry-fn') continue;
    if (names.has(e.name)) throw optionError(`limits[${e.index}].name`, `'${e.name}' is used twice`);
    names.add(e.name);
  }
  return entries;
}
