/**
 * `/v1/check`'s reservations (`op: reserve`, `settle`, `cancel`): a cost taken now and settled later by
 * id, held in this process — bounded in count, each lapsing unsettled after a time-to-live, charged in full.
 */
import type { Decision, ResolvedPolicy, Store } from 'sluice';
import { SluiceError } from 'sluice';
import { chargeItems } from './check-ops.js';

/** How long a reservation may stay unsettled, by default (the library's `reservationTtl` default). */
export const DEFAULT_RESERVATION_TTL_MS = 600_000;
/** Most reservations held at once, by default. */
export const DEFAULT_MAX_RESERVATIONS = 100_000;
/** Longest reservation id a caller may send (ids made here are ~20 characters). */
const MAX_ID_LENGTH = 64;

/** A reservation held: where its cost was taken, how much, until when. */
interface Held {
  readonly storedKey: string;
  readonly policy: ResolvedPolicy;
  readonly cost: number;
  readonly expiresAt: number;
  /** Taken from nothing (an allow-listed key): settling it moves no counter. */
  readonly free: boolean;
}

/** What a settle or cancel did. */
export interface Settled {
  settled: true;
  reserved: number;
  charged: number;
  refunded: number;
}

/** Options of {@link createCheckReservations}. */
export interface CheckReservationOptions {
  readonly store: Store;
  /** @default DEFAULT_RESERVATION_TTL_MS */
  readonly ttlMs?: number;
  /** @default DEFAULT_MAX_RESERVATIONS */
  readonly max?: number;
}

/** The reservations of one `/v1/check` API. */
export interface CheckReservations {
  /** Takes `cost` (or answers why not); the id and expiry when allowed. */
  reserve(
    storedKey: string,
    policy: ResolvedPolicy,
    cost: number,
    atMs: number,
    free: boolean,
  ): Promise<{ decision: Decision; reservation?: { id: string; expiresAt: number } }>;
  /** Settles at `actual` (cancel: `undefined`, everything back); throws a coded SluiceError when it cannot. */
  settle(
    id: unknown,
    storedKey: string,
    policy: ResolvedPolicy,
    actual: number | undefined,
    atMs: number,
  ): Promise<Settled>;
  /** Reservations neither settled nor lapsed. */
  readonly outstanding: number;
}

/** Creates the book; see the file's comment. */
export function createCheckReservations(options: CheckReservationOptions): CheckReservations {
  const { store } = options;
  const ttlMs = options.ttlMs ?? DEFAULT_RESERVATION_TTL_MS;
  const max = options.max ?? DEFAULT_MAX_RESERVATIONS;
  // One TTL for all, so insertion order is expiry order: lapsing reads from the front.
  const held = new Map<string, Held>();
  // Ids finished lately (settled or lapsed), so a double settle or a late one is told apart from a wrong id.
  const finished = new Map<string, 'settled' | 'expired'>();
  let sequence = 0;
  const prefix = Math.random().toString(36).slice(2, 8);

  const remember = (id: string, how: 'settled' | 'expired') => {
    finished.set(id, how);
    if (finished.size > max) finished.delete(finished.keys().next().value as string);
  };
  // A lapsed reservation stays charged in full (onExpire 'charge'): nothing to give back, only to forget.
  const lapse = (nowMs: number) => {
    for (const [id, entry] of held) {
      if (entry.expiresAt > nowMs) break;
      held.delete(id);
      remember(id, 'expired');
    }
  };

  return {
    async reserve(storedKey, policy, cost, atMs, free) {
      lapse(atMs);
      if (held.size >= max) {
        throw new SluiceError(
          'ERR_SLUICE_TOO_MANY_RESERVATIONS',
          `this service holds ${max} open reservations already: settle or cancel them (or raise --max-reservations)`,
        );
      }
      const decision: Decision = free
        ? { allowed: true, limit: policy.limit, remaining: policy.limit, resetMs: 0, retryAfterMs: 0 }
        : await store.check(storedKey, policy, cost, atMs, true);
      if (!decision.allowed) return { decision };
      const id = `${prefix}.${(++sequence).toString(36)}.${Math.random().toString(36).slice(2, 10)}`;
      const expiresAt = atMs + ttlMs;
      held.set(id, { storedKey, policy, cost, expiresAt, free });
      return { decision, reservation: { id, expiresAt } };
    },
    async settle(id, storedKey, policy, actual, atMs) {
      if (typeof id !== 'string' || id === '' || id.length > MAX_ID_LENGTH) {
        throw new SluiceError('ERR_SLUICE_INVALID_REQUEST', 'reservation: expected the id a reserve returned');
      }
      lapse(atMs);
      const entry = held.get(id);
      if (entry === undefined) throw refusal(finished.get(id));
      if (entry.storedKey !== storedKey || entry.policy.id !== policy.id) {
        throw new SluiceError(
          'ERR_SLUICE_RESERVATION_MISMATCH',
          'reservation: it was taken for another key, limit or period; send the ones of its reserve (it stays open)',
        );
      }
      held.delete(id);
      remember(id, 'settled');
      return entry.free
        ? { settled: true, reserved: entry.cost, charged: 0, refunded: 0 }
        : move(store, entry, actual ?? 0, atMs);
    },
    get outstanding() {
      return held.size;
    },
  };
}

/** Moves a reservation's charge to `actual`: the difference back, or the extra charged (debt; check-ops.ts). */
async function move(store: Store, entry: Held, actual: number, atMs: number): Promise<Settled> {
  const { storedKey, policy, cost } = entry;
  if (actual <= cost) {
    if (actual < cost) await store.refund(storedKey, policy, cost - actual, atMs);
    return { settled: true, reserved: cost, charged: actual, refunded: cost - actual };
  }
  // The request already ran: its extra is owed, charged past the limit if need be, and later requests wait until
  // it is paid — over a window the key gets at most the limit plus one request's overshoot. A store without charge
  // (multi-region) takes it only while the limit has room.
  const [extra] = await chargeItems(store, [{ key: storedKey, policy, cost: actual - cost }], atMs);
  const took = store.charge !== undefined || extra?.allowed === true;
  return { settled: true, reserved: cost, charged: took ? actual : cost, refunded: 0 };
}

function refusal(how: 'settled' | 'expired' | undefined): SluiceError {
  if (how === 'settled') {
    return new SluiceError(
      'ERR_SLUICE_RESERVATION_SETTLED',
      'reservation: settled or cancelled already; nothing changed',
    );
  }
  if (how === 'expired') {
    return new SluiceError(
      'ERR_SLUICE_RESERVATION_EXPIRED',
      'reservation: it lapsed unsettled and stays charged in full; settle sooner or raise --reservation-ttl',
    );
  }
  return new SluiceError(
    'ERR_SLUICE_RESERVATION_UNKNOWN',
    'reservation: no such reservation here (a wrong id, one forgotten long ago, or one another service process holds)',
  );
}
