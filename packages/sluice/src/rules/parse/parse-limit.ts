/**
 * Parsing one `rate_limit` (or `rate_limits` item) into a validated policy: envoy ratelimit's `unit` and
 * `requests_per_unit`, plus sluice's `algorithm`, `period` and `burst`.
 */
import { isSluiceError } from '../../core/errors.js';
import { type AlgorithmName, type ResolvedPolicy, resolvePolicy } from '../../core/policy.js';
import { RULE_ISSUE_CODES as C } from '../codes.js';
import type { RuleLimit } from '../types.js';
import { UNITS } from '../units.js';
import {
  parseAlgorithmAndBurst,
  parseLimitTime,
  parseRequestsPerUnit,
  reportUnlimitedExtras,
} from './parse-limit-fields.js';
import { type Field, joinPath, type Node, type Reader } from './reader.js';

const _UNIT_LIST = UNITS.map((u) => u.toLowerCase()).join(', ');
/** envoy ratelimit's `requests_per_unit` is a uint32. */
const MAX_UINT32 = 4_294_967_295;

/** Fields of `rate_limit`. */
export const RATE_LIMIT_FIELDS = [
  'unit',
  'requests_per_unit',
  'unlimited',
  'name',
  'replaces',
  'algorithm',
  'burst',
  'period',
] as const;
/** Fields of one `rate_limits` item (no `unlimited`: that is a property of the descriptor). */
export const RATE_LIMITS_ITEM_FIELDS = RATE_LIMIT_FIELDS.filter((f) => f !== 'unlimited');

/** What one `rate_limit` (or `rate_limits` item) says. */
export interface ParsedLimit {
  /** The limit, or undefined for `unlimited: true` or when it was invalid. */
  limit?: RuleLimit;
  unlimited: boolean;
  name?: string;
  replaces: string[];
}

/**
 * Validates one limit map. `ruleId` and `slot` make the counter identity: a limit keeps its counters
 * across reloads as long as its rule path, its slot (name or position) and its policy stay the same.
 */
export function parseLimit(
  r: Reader,
  node: Node | undefined,
  at: Node,
  path: string,
  known: readonly string[],
  ruleId: string,
  slot: string,
): ParsedLimit {
  const f = r.fields(node, path, known, at);
  if (f === undefined) return { unlimited: false, replaces: [] };
  const p = (name: string) => joinPath(path, name);
  const unlimited = r.boolean(f.get('unlimited'), p('unlimited')) ?? false;
  const name = r.string(f.get('name'), p('name')) || undefined;
  const replaces = parseReplaces(r, f.get('replaces'), p('replaces'), name);
  const _unitField = f.get('unit');
  const _periodField = f.get('period');

  if (unlimited) {
    reportUnlimitedExtras(r, f, p);
    return { unlimited, ...(name === undefined ? {} : { name }), replaces };
  }
  const { periodMs, unit } = parseLimitTime(r, f, p, path, at);
  const requestsPerUnit = parseRequestsPerUnit(r, f, p);
  const { algorithm, burst, ok } = parseAlgorithmAndBurst(r, f, p);
  if (requestsPerUnit === undefined || !ok || periodMs === undefined) {
    return { unlimited, ...(name === undefined ? {} : { name }), replaces };
  }
  const policy = buildPolicy(r, { algorithm, requestsPerUnit, periodMs, burst }, path, f, at);
  if (policy === undefined) return { unlimited, ...(name === undefined ? {} : { name }), replaces };
  const id = `${ruleId}#${slot}`;
  // Fixed windows count requests in a window whatever the limit, so their counters survive a change of
  // limit (as in envoy ratelimit, where the counter key does not contain the limit); other algorithms
  // keep state in units of their policy and start afresh when it changes.
  const policyPart = algorithm === 'fixed-window' ? `fw/${periodMs}` : policy.id;
  const limit: RuleLimit = {
    ...(name === undefined ? {} : { name }),
    requestsPerUnit,
    ...(unit === undefined ? {} : { unit }),
    periodMs,
    algorithm,
    ...(burst === undefined ? {} : { burst }),
    replaces,
    policy: { ...policy, id: `${id}~${policyPart}` },
    id,
  };
  return { limit, unlimited, ...(name === undefined ? {} : { name }), replaces };
}

function parseReplaces(r: Reader, field: Field | undefined, path: string, ownName: string | undefined): string[] {
  if (field === undefined) return [];
  const items = r.list(field, path);
  const names: string[] = [];
  for (const [i, item] of (items ?? []).entries()) {
    const itemPath = `${path}[${i}]`;
    const f = r.fields(item.node, itemPath, ['name'], item.at);
    if (f === undefined) continue;
    const name = r.string(f.get('name'), `${itemPath}.name`);
    if (name === undefined) continue;
    if (name === '') {
      r.report(C.replacesEmpty, `${itemPath}: a replaces entry needs a non-empty name`, f.get('name')?.at ?? item.at);
    } else if (name === ownName) {
      r.report(
        C.replacesSelf,
        `${itemPath}.name: '${name}' is this limit's own name; a limit cannot replace itself`,
        f.get('name')?.at ?? item.at,
      );
    } else names.push(name);
  }
  return names;
}

interface PolicyInput {
  algorithm: AlgorithmName;
  requestsPerUnit: number;
  periodMs: number;
  burst: number | undefined;
}

function buildPolicy(
  r: Reader,
  input: PolicyInput,
  path: string,
  f: Map<string, Field>,
  at: Node,
): ResolvedPolicy | undefined {
  const { algorithm, requestsPerUnit, periodMs, burst } = input;
  const options = { algorithm, limit: requestsPerUnit, period: periodMs, ...(burst === undefined ? {} : { burst }) };
  try {
    return resolvePolicy(options);
  } catch (error) {
    // A fixed window only compares a count with the limit, so any uint32 limit over any period counts
    // exactly; envoy configs with large monthly or yearly quotas must load unchanged.
    if (algorithm === 'fixed-window' && requestsPerUnit <= MAX_UINT32) {
      const base = resolvePolicy({ algorithm, limit: 1, period: periodMs });
      return { ...base, limit: requestsPerUnit, capacity: requestsPerUnit, burst: requestsPerUnit };
    }
    const code = isSluiceError(error) ? error.code : '';
    const field =
      code === 'ERR_SLUICE_INVALID_BURST'
        ? f.get('burst')
        : code === 'ERR_SLUICE_INVALID_PERIOD'
          ? (f.get('period') ?? f.get('unit'))
          : f.get('requests_per_unit');
    const issue =
      code === 'ERR_SLUICE_INVALID_BURST'
        ? C.invalidBurst
        : code === 'ERR_SLUICE_INVALID_PERIOD'
          ? C.badDuration
          : C.invalidLimit;
    // resolvePolicy's message names `limit`/`period`/`burst`; say it in the config's words.
    const why = (error as Error).message.replace(/^limit:/, 'requests_per_unit:').replace(/^(\w+):\s*/, '');
    const fieldName = field?.name ?? 'requests_per_unit';
    r.report(issue, `${joinPath(path, fieldName)}: ${why}`, field?.at ?? at);
    return undefined;
  }
}
