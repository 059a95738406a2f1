/**
 * The options of `sluice/hono`'s edge build, checked once: which options it carries (the others are
 * `sluice/hono/full`'s), and its limits compiled into policies, header facts and key sources exactly as the full
 * middleware compiles them, so both count under the same counters and send the same headers.
 */
import type { Context } from 'hono';
import { optionError } from '../../core/errors.js';
import { type PolicyOptions, type ResolvedPolicy, resolvePolicy } from '../../core/policy.js';
import { type LimitHeaderInfo, limitHeaderInfo } from '../../http/headers.js';
import { checkMissingKey, type MissingKey } from '../../http/keys.js';
import { checkLimitFields, POLICY_FIELDS, pickPolicy } from '../../http/limit-entries.js';
import type { HttpLimit, RateLimitOptions } from '../../http/options.js';
import type { RequestFn } from '../../http/request.js';

/** Options the edge build leaves to `sluice/hono/full`, which has every option of every adapter. */
const FULL_ONLY =
  'rules insuranceShare allow deny concurrency maxDelayMs sleep xRateLimitReset body trustProxy proxyHeader skipSuccessfulRequests skipFailedRequests requestWasSuccessful responseCost adaptive tokenBudget'.split(
    ' ',
  );
/** Options the edge build carries. */
const EDGE =
  'algorithm limit period burst blockDuration limits name key missingKey shared store clock fail skip cost mode shadow headers statusCode message onLimited peerAddress ipv6Subnet handler'.split(
    ' ',
  );

/** A policy and its header facts, as the full middleware's limiter reads them. */
export interface EdgePolicy {
  readonly policy: ResolvedPolicy;
  readonly header: LimitHeaderInfo;
}

/** One limit of the middleware. */
export interface EdgeLimit {
  readonly name: string;
  /** The policy when `limit` is a number; else made per request by `policyFor`. */
  readonly fixed: EdgePolicy | undefined;
  readonly policyFor: (limit: number) => EdgePolicy;
  readonly limitFn: RequestFn<Context, number> | undefined;
  /** The limit's own key function; undefined = the middleware's key. */
  readonly keyFn: RequestFn<Context, unknown> | undefined;
  readonly missing: MissingKey;
  /** The option a bad key is reported under. */
  readonly keyOption: string;
}

/** Throws the edge build's error for an option only `sluice/hono/full` has. */
function fullOnly(option: string): never {
  throw optionError(
    option,
    "not in the edge build of sluice/hono (the 'workerd', 'worker' and 'edge-light' conditions), which stays small; import { rateLimit } from 'sluice/hono/full' for every option",
    'ERR_SLUICE_EDGE_OPTION',
  );
}

/** Checks the option names and the values the edge build reads itself (policies are checked by resolvePolicy). */
export function checkEdgeOptions(options: RateLimitOptions<Context>): void {
  if (options === null || typeof options !== 'object') throw optionError('options', 'expected an object');
  for (const key of Object.keys(options)) {
    if (FULL_ONLY.includes(key)) fullOnly(key);
    if (!EDGE.includes(key))
      throw optionError(key, `unknown option (known: ${EDGE.join(', ')})`, 'ERR_SLUICE_UNKNOWN_OPTION');
  }
  if (options.mode !== undefined && options.mode !== 'reject') fullOnly('mode');
  if (options.fail === 'insurance') fullOnly('fail');
  if (options.fail !== undefined && options.fail !== 'open' && options.fail !== 'closed')
    throw optionError('fail', "expected 'open' or 'closed'");
  if (![undefined, false, 'x', 'draft', 'both'].includes(options.headers as string))
    throw optionError('headers', "expected 'x', 'draft', 'both' or false");
  const status = options.statusCode;
  if (status !== undefined && !(Number.isInteger(status) && status >= 400 && status <= 599))
    throw optionError('statusCode', `${String(status)} is not an HTTP error status (400–599)`);
  const fns = options as Record<string, unknown>;
  for (const name of ['key', 'skip', 'onLimited', 'peerAddress', 'handler'])
    if (fns[name] !== undefined && typeof fns[name] !== 'function') throw optionError(name, 'expected a function');
}

/**
 * The policy of a limit: validated with the path the user wrote, its counters named as the full middleware's limiter
 * names them (`<middleware>~` before an inline policy's id, `<middleware>~<limit>~` before a listed one's).
 */
function policyMaker(fields: PolicyOptions, path: string, name: string, scope: string): (limit: number) => EdgePolicy {
  return (limit) => {
    const p = resolvePolicy({ ...fields, limit }, path);
    const policy = scope === '' ? p : { ...p, id: scope + p.id };
    return { policy, header: limitHeaderInfo(name, policy.periodMs, policy.limit, 'name', policy) };
  };
}

/** One limit: its policy now when `limit` is a number (checked now either way, with a limit of 1 for a function). */
function compile(
  source: Partial<HttpLimit<Context>>,
  name: string,
  path: string,
  scope: string,
  missing: MissingKey,
): EdgeLimit {
  const policyFor = policyMaker(pickPolicy(source, undefined) as PolicyOptions, path, name, scope);
  const limit = source.limit;
  const limitFn = typeof limit === 'function' ? limit : undefined;
  const fixed = policyFor(limitFn === undefined ? (limit as number) : 1);
  const keyFn = source.key;
  if (keyFn !== undefined && typeof keyFn !== 'function') throw optionError(`${path}key`, 'expected a function');
  return {
    name,
    fixed: limitFn === undefined ? fixed : undefined,
    policyFor,
    limitFn,
    keyFn,
    missing: checkMissingKey(source.missingKey, `${path}missingKey`) ?? missing,
    keyOption: keyFn === undefined ? 'key' : `${path}key`,
  };
}

/** The limits of the options: the inline one, or each of `limits` (never both, names distinct). */
export function edgeLimits(options: RateLimitOptions<Context>): EdgeLimit[] {
  const missing = checkMissingKey(options.missingKey, 'missingKey') ?? 'ip';
  const middleware = options.name;
  if (middleware !== undefined && (typeof middleware !== 'string' || middleware === ''))
    throw optionError('name', 'expected a non-empty string');
  const list = options.limits;
  if (list === undefined) {
    const { key: _key, missingKey: _missing, ...inline } = options;
    return [compile(inline, middleware ?? 'default', '', middleware === undefined ? '' : `${middleware}~`, missing)];
  }
  const inline = POLICY_FIELDS.filter((f) => options[f] !== undefined);
  if (inline.length > 0) throw optionError('limits', `give limits: [...] or ${inline.join(', ')}, not both`);
  if (!Array.isArray(list) || list.length === 0) throw optionError('limits', 'expected a non-empty array of limits');
  const names = new Set<string>();
  return list.map((entry, i) => {
    const path = `limits[${i}].`;
    if (typeof entry === 'function') fullOnly(`limits[${i}]`);
    if (entry === null || typeof entry !== 'object') throw optionError(`limits[${i}]`, 'expected a limit object');
    checkLimitFields(entry, `limits[${i}]`);
    const name = entry.name ?? `limit${i}`;
    if (typeof name !== 'string' || name === '' || names.has(name))
      throw optionError(`${path}name`, 'expected a unique, non-empty string');
    names.add(name);
    return compile(entry, name, path, `${middleware === undefined ? '' : `${middleware}~`}${name}~`, missing);
  });
}
