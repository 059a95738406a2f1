/**
 * Reading one `POST /v1/check` item: its key, op, time, group and policy, each checked with a coded
 * error naming the field; policies resolved once and kept in a bounded cache (callers repeat a few).
 */
import type { ResolvedPolicy } from 'sluice';
import { isSluiceError, resolveCost, resolvePolicy, SluiceError } from 'sluice';
import {
  acquireArgs,
  type CheckOp,
  EXTENSION_KEYS,
  groupOf,
  MAX_NAME_LENGTH,
  opOf,
  scopedPolicy,
  timeOf,
} from './check-ops.js';
import { isObject } from './respond.js';

/** Longest key accepted, in characters. */
export const MAX_KEY_LENGTH = 1024;
/** Longest string a policy field (`algorithm`, `period`, `blockDuration`) may be, in characters. */
export const MAX_FIELD_LENGTH = 64;

const ITEM_KEYS = new Set(['key', 'cost', ...EXTENSION_KEYS]);
/** The fields that make an item's policy (`name` is one: it scopes the counters). */
const POLICY_FIELDS = ['algorithm', 'limit', 'period', 'burst', 'blockDuration', 'name'] as const;
const KNOWN_FIELDS = new Set<string>([...ITEM_KEYS, ...POLICY_FIELDS]);

/** An item, validated: what to do, to which key, under which policy, at what time. */
export interface ParsedCheck {
  readonly op: CheckOp;
  readonly key: string;
  /** Undefined for `acquire` and `release`, which take no policy. */
  readonly policy: ResolvedPolicy | undefined;
  readonly cost: number;
  readonly atMs: number;
  readonly group: string | undefined;
  readonly item: Record<string, unknown>;
  readonly path: string;
  /** `acquire`: the lease asked for. */
  readonly lease?: { limit: number; leaseMs: number };
}

/** Options of {@link createCheckParser}. */
export interface CheckParserOptions {
  /** Most distinct policies kept resolved; the oldest is dropped beyond. */
  readonly maxPolicies: number;
  /** Accept a caller's `nowMs`. */
  readonly clientClock: boolean;
}

/** Parses item `i` of a request decided at `atMs`; throws a SluiceError naming the field. */
export function createCheckParser(
  options: CheckParserOptions,
): (item: unknown, i: number, atMs: number) => ParsedCheck {
  const policyFor = createPolicyCache(options.maxPolicies);
  return (item, i, atMs) => {
    const path = `checks[${i}].`;
    if (!isObject(item)) throw new SluiceError('ERR_SLUICE_INVALID_REQUEST', `checks[${i}]: expected an object`);
    if (typeof item.key !== 'string' || item.key === '' || item.key.length > MAX_KEY_LENGTH) {
      throw new SluiceError(
        'ERR_SLUICE_INVALID_KEY',
        `${path}key: expected a non-empty string of at most ${MAX_KEY_LENGTH} characters`,
      );
    }
    const op = opOf(item, path);
    const at = timeOf(item, path, atMs, options.clientClock);
    const group = groupOf(item, path);
    if (group !== undefined && op !== 'check' && op !== 'peek' && op !== 'charge') {
      throw new SluiceError(
        'ERR_SLUICE_INVALID_REQUEST',
        `${path}group: only checks, peeks and charges are decided in groups`,
      );
    }
    const key = item.key;
    // Object literals, not spreads of a shared base (nor a spread in the decision event): with them,
    // about 400 kB more of the requests stayed alive through each young-generation GC under load and was
    // promoted (`POST /v1/check` from autocannon, `node --trace-gc-nvp`; see also sendJson).
    if (op === 'acquire') {
      const lease = acquireArgs(item, path);
      return { op, key, atMs: at, group, item, path, policy: undefined, cost: 1, lease };
    }
    if (op === 'release') return { op, key, atMs: at, group, item, path, policy: undefined, cost: 0 };
    const policy = policyFor(item, path);
    const cost = op === 'reset' || op === 'cancel' ? 0 : withPath(() => costOf(item, op), path);
    return { op, key, atMs: at, group, item, path, policy, cost };
  };
}

/** An item's cost; a settle must say its actual cost, and only settles and cancels name a reservation. */
function costOf(item: Record<string, unknown>, op: CheckOp): number {
  if (item.reservation !== undefined && op !== 'settle') {
    throw new SluiceError('ERR_SLUICE_INVALID_REQUEST', 'reservation: only a settle or a cancel names a reservation');
  }
  if (op === 'settle' && item.cost === undefined) {
    throw new SluiceError('ERR_SLUICE_INVALID_COST', 'cost: a settle needs the actual cost (a whole number ≥ 0)');
  }
  return resolveCost(item.cost);
}

/** Resolves an item's policy fields, through a bounded cache keyed by those fields. */
function createPolicyCache(maxPolicies: number) {
  const policies = new Map<string, ResolvedPolicy>();
  return (item: Record<string, unknown>, path: string): ResolvedPolicy => {
    // Every field is checked before anything walks a value: an unknown field may hold anything (a
    // 100,000-deep array would overflow JSON.stringify's stack), and error messages quote only short text.
    for (const name of Object.keys(item)) {
      if (!KNOWN_FIELDS.has(name)) {
        throw new SluiceError(
          'ERR_SLUICE_UNKNOWN_OPTION',
          `${path}${clip(name)}: unknown field (known: ${[...KNOWN_FIELDS].join(', ')})`,
          { option: `${path}${clip(name)}` },
        );
      }
    }
    const values = POLICY_FIELDS.map((name) => policyField(item[name], name, path));
    // The policy fields are the cache key, so an unknown field never hits a cached policy.
    const cacheKey = JSON.stringify(values);
    const cached = policies.get(cacheKey);
    if (cached !== undefined) return cached;
    const resolved = scopedPolicy(resolvePolicy(item as never, path, ITEM_KEYS), item.name, path);
    if (policies.size >= maxPolicies) policies.delete(policies.keys().next().value as string);
    policies.set(cacheKey, resolved);
    return resolved;
  };
}

/** One policy field as given (a number, a short string, or null when absent), checked. */
function policyField(v: unknown, name: (typeof POLICY_FIELDS)[number], path: string): string | number | null {
  if (name === 'name' && v !== undefined && typeof v !== 'string') {
    throw new SluiceError(
      'ERR_SLUICE_INVALID_REQUEST',
      `${path}name: expected a non-empty string of at most ${MAX_NAME_LENGTH} printable characters`,
    );
  }
  if (v === undefined || typeof v === 'number') return v ?? null;
  if (typeof v !== 'string') {
    throw new SluiceError('ERR_SLUICE_INVALID_OPTION', `${path}${name}: expected a number or a string`, {
      option: `${path}${name}`,
    });
  }
  if (v.length > MAX_FIELD_LENGTH && name !== 'name') {
    throw new SluiceError(
      'ERR_SLUICE_FIELD_TOO_LONG',
      `${path}${name}: at most ${MAX_FIELD_LENGTH} characters, got ${v.length}`,
      {
        option: `${path}${name}`,
      },
    );
  }
  return v;
}

/** At most MAX_FIELD_LENGTH characters of a caller's text, for messages. */
function clip(text: string): string {
  return text.length <= MAX_FIELD_LENGTH ? text : `${text.slice(0, MAX_FIELD_LENGTH)}…`;
}

function withPath<T>(work: () => T, path: string): T {
  try {
    return work();
  } catch (error) {
    if (isSluiceError(error) && !error.message.startsWith(path)) {
      throw new SluiceError(error.code, `${path}${error.message}`);
    }
    throw error;
  }
}
