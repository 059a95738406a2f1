/**
 * What `/v1/check` does besides a plain check, for `sluice/remote` (a library store that lives in this
 * service) and any other caller: per item an `op` — `peek`, `refund`, `reset`, `acquire`, `release`,
 * `reserve`, `settle`, `cancel` —
 * a `name` that keeps a caller's counters apart, a `group` of items decided all or nothing, and, when the
 * service runs with `--client-clock`, the caller's `nowMs`. All of it optional: a plain check is as before.
 * `charge` takes a cost even past the limit (a settle's extra: debt that later checks wait out), `sluice/remote`'s
 * Store.charge.
 */
import type { Decision, Lease, ResolvedPolicy, Store, StoreItem } from 'sluice';
import { SluiceError } from 'sluice';

/** The operations of an item; `check` when absent. */
export const OPS = [
  'check',
  'peek',
  'refund',
  'reset',
  'acquire',
  'release',
  'reserve',
  'settle',
  'cancel',
  'charge',
] as const;
export type CheckOp = (typeof OPS)[number];

/** Item fields beyond the policy, `key` and `cost`. */
export const EXTENSION_KEYS = ['op', 'group', 'name', 'nowMs', 'leaseMs', 'lease', 'reservation'] as const;

/** Longest `name`; longest `group` when it is a string; longest lease id. */
export const MAX_NAME_LENGTH = 128;
const MAX_GROUP_LENGTH = 64;
const MAX_LEASE_ID_LENGTH = 128;
/** Largest `nowMs` accepted (year ~6400): keeps every sum with it an exact double. */
const MAX_NOW_MS = 2 ** 47;
/** Longest lease, and most concurrent holders per key. */
const MAX_LEASE_MS = 86_400_000;
const MAX_CONCURRENCY = 1_000_000;

/** The op of an item, validated. */
export function opOf(item: Record<string, unknown>, path: string): CheckOp {
  const op = item.op ?? 'check';
  if (typeof op !== 'string' || !(OPS as readonly string[]).includes(op)) {
    throw new SluiceError('ERR_SLUICE_INVALID_REQUEST', `${path}op: expected one of ${OPS.join(', ')}`);
  }
  return op as CheckOp;
}

/** The time an item is decided at: the service's clock, or the caller's when `--client-clock` allows it. */
export function timeOf(item: Record<string, unknown>, path: string, atMs: number, clientClock: boolean): number {
  const now = item.nowMs;
  if (now === undefined) return atMs;
  if (!clientClock) {
    throw new SluiceError(
      'ERR_SLUICE_CLIENT_CLOCK_DISABLED',
      `${path}nowMs: this service decides on its own clock; start it with --client-clock to accept the caller's (tests only)`,
    );
  }
  if (typeof now !== 'number' || !Number.isInteger(now) || now < 0 || now > MAX_NOW_MS) {
    throw new SluiceError('ERR_SLUICE_INVALID_REQUEST', `${path}nowMs: expected a whole number of ms since the epoch`);
  }
  return now;
}

/** The policy id of an item: the canonical one, scoped by `name` when given. */
export function scopedPolicy(policy: ResolvedPolicy, name: unknown, path: string): ResolvedPolicy {
  if (name === undefined) return policy;
  if (typeof name !== 'string' || name === '' || name.length > MAX_NAME_LENGTH || hasControl(name)) {
    throw new SluiceError(
      'ERR_SLUICE_INVALID_REQUEST',
      `${path}name: expected a non-empty string of at most ${MAX_NAME_LENGTH} printable characters`,
    );
  }
  return { ...policy, id: `${name}~${policy.id}` };
}

function hasControl(text: string): boolean {
  for (let i = 0; i < text.length; i++) if (text.charCodeAt(i) < 0x20) return true;
  return false;
}

/** The group of an item (a string or an integer), as a map key; undefined when it has none. */
export function groupOf(item: Record<string, unknown>, path: string): string | undefined {
  const g = item.group;
  if (g === undefined) return undefined;
  if (typeof g === 'number' && Number.isSafeInteger(g)) return `n${g}`;
  if (typeof g === 'string' && g !== '' && g.length <= MAX_GROUP_LENGTH) return `s${g}`;
  throw new SluiceError(
    'ERR_SLUICE_INVALID_REQUEST',
    `${path}group: expected an integer or a string of at most ${MAX_GROUP_LENGTH} characters`,
  );
}

/** A concurrency slot request: `{op: "acquire", key, limit, leaseMs}`. */
export function acquireArgs(item: Record<string, unknown>, path: string): { limit: number; leaseMs: number } {
  const { limit, leaseMs } = item;
  if (typeof limit !== 'number' || !Number.isInteger(limit) || limit < 0 || limit > MAX_CONCURRENCY) {
    throw new SluiceError(
      'ERR_SLUICE_INVALID_LIMIT',
      `${path}limit: expected a whole number from 0 to ${MAX_CONCURRENCY}`,
    );
  }
  if (typeof leaseMs !== 'number' || !Number.isInteger(leaseMs) || leaseMs < 1 || leaseMs > MAX_LEASE_MS) {
    throw new SluiceError(
      'ERR_SLUICE_INVALID_REQUEST',
      `${path}leaseMs: expected a whole number of ms from 1 to ${MAX_LEASE_MS}`,
    );
  }
  for (const field of Object.keys(item)) {
    if (!['key', 'op', 'limit', 'leaseMs', 'nowMs'].includes(field)) {
      throw new SluiceError('ERR_SLUICE_UNKNOWN_OPTION', `${path}${field}: not a field of an acquire`);
    }
  }
  return { limit, leaseMs };
}

/** A lease to end: `{op: "release", key, lease}`. */
export function releaseArgs(item: Record<string, unknown>, path: string, storedKey: string): Lease {
  const id = item.lease;
  if (typeof id !== 'string' || id === '' || id.length > MAX_LEASE_ID_LENGTH) {
    throw new SluiceError('ERR_SLUICE_INVALID_REQUEST', `${path}lease: expected the lease id an acquire returned`);
  }
  for (const field of Object.keys(item)) {
    if (!['key', 'op', 'lease', 'nowMs'].includes(field)) {
      throw new SluiceError('ERR_SLUICE_UNKNOWN_OPTION', `${path}${field}: not a field of a release`);
    }
  }
  return { key: storedKey, id, expiresAt: 0 };
}

/**
 * `charge`: every item's cost taken even past its limit, in one step of the store (Store.charge); a store without
 * charge (multi-region) takes it as a check, only as far as it fits.
 */
export function chargeItems(store: Store, items: readonly StoreItem[], atMs: number): Promise<Decision[]> {
  const charged = store.charge === undefined ? store.checkMany(items, atMs, true) : store.charge(items, atMs);
  return Promise.resolve(charged);
}

/** One member of a group, validated. */
export interface GroupMember {
  readonly index: number;
  readonly item: StoreItem;
  /** `allow` / `deny` when an access list matched its key. */
  readonly list: 'allow' | 'deny' | undefined;
}

/**
 * Decides a group all or nothing (the store's `checkMany`): a denied member rejects the whole group,
 * and the others only look; allow-listed members pass without counting.
 */
export async function decideGroup(
  store: Store,
  members: readonly GroupMember[],
  atMs: number,
  commit: boolean,
): Promise<Decision[]> {
  const counted = members.filter((m) => m.list === undefined);
  const denied = members.some((m) => m.list === 'deny');
  const decided =
    counted.length === 0
      ? []
      : await store.checkMany(
          counted.map((m) => m.item),
          atMs,
          commit && !denied,
        );
  const byIndex = new Map<number, Decision>();
  counted.forEach((m, i) => {
    byIndex.set(m.index, decided[i] as Decision);
  });
  return members.map((m) => {
    const { limit } = m.item.policy;
    if (m.list === 'deny') {
      return {
        allowed: false,
        limit,
        remaining: 0,
        resetMs: 0,
        retryAfterMs: Number.POSITIVE_INFINITY,
        reason: 'denied',
      };
    }
    if (m.list === 'allow') return { allowed: true, limit, remaining: limit, resetMs: 0, retryAfterMs: 0 };
    return byIndex.get(m.index) as Decision;
  });
}
