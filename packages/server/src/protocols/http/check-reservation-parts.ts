/**
 * What `/v1/check`'s two reservation books share: their interface, the answers a settle cannot give
 * (coded errors), moving a reservation's charge to its actual cost, and checking the id a caller sends.
 */
import type { Decision, ResolvedPolicy, Store } from 'sluice';
import { SluiceError } from 'sluice';
import { chargeItems } from './check-ops.js';

/** Longest reservation id a caller may send (ids made here are at most ~30 characters). */
const MAX_ID_LENGTH = 64;

/** What a settle or cancel did. */
export interface Settled {
  settled: true;
  reserved: number;
  charged: number;
  refunded: number;
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
  /** Reservations neither settled nor lapsed (made by this process). */
  readonly outstanding: number;
}

/** A reservation's charge: where it was taken, how much, and when. */
export interface Charge {
  readonly storedKey: string;
  readonly policy: ResolvedPolicy;
  readonly cost: number;
  /** When it was taken (the reserve's time): a give-back goes to the window that counted it. Absent: now. */
  readonly takenAtMs?: number;
}

/** The id a settle names, or a coded error when it cannot be one. */
export function checkedId(id: unknown): string {
  if (typeof id !== 'string' || id === '' || id.length > MAX_ID_LENGTH) {
    throw new SluiceError('ERR_SLUICE_INVALID_REQUEST', 'reservation: expected the id a reserve returned');
  }
  return id;
}

/** Moves a reservation's charge to `actual`: the difference back, or the extra charged (debt; check-ops.ts). */
export async function move(store: Store, entry: Charge, actual: number, atMs: number): Promise<Settled> {
  const { storedKey, policy, cost, takenAtMs } = entry;
  if (actual <= cost) {
    // Back to the window that counted the reservation: after it has ended, nothing frees room in the new one.
    if (actual < cost) await store.refund(storedKey, policy, cost - actual, atMs, takenAtMs);
    return { settled: true, reserved: cost, charged: actual, refunded: cost - actual };
  }
  // The request already ran: its extra is owed, charged past the limit if need be, and later requests wait until
  // it is paid — over a window the key gets at most the limit plus one request's overshoot. A store without charge
  // (multi-region) takes it only while the limit has room.
  const [extra] = await chargeItems(store, [{ key: storedKey, policy, cost: actual - cost }], atMs);
  const took = store.charge !== undefined || extra?.allowed === true;
  return { settled: true, reserved: cost, charged: took ? actual : cost, refunded: 0 };
}

/** A settle naming a reservation of another key or policy (it stays open). */
export function mismatch(): SluiceError {
  return new SluiceError(
    'ERR_SLUICE_RESERVATION_MISMATCH',
    'reservation: it was taken for another key, limit or period; send the ones of its reserve (it stays open)',
  );
}

/** A book past its bound refuses new reservations. */
export function tooMany(max: number): SluiceError {
  return new SluiceError(
    'ERR_SLUICE_TOO_MANY_RESERVATIONS',
    `this service holds ${max} open reservations already: settle or cancel them (or raise --max-reservations)`,
  );
}

/** Why there is nothing to settle: settled already, lapsed, or never known here. */
export function refusal(how: 'settled' | 'expired' | undefined): SluiceError {
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
