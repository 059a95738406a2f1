/**
 * `/v1/check`'s reservations recorded in the store (Redis): any instance settles a reservation by its id,
 * exactly once (the record is taken out atomically), and the records a crashed instance left are claimed
 * by the next instance that sweeps once they lapse — charged in full, as every lapsed reservation is.
 */
import { randomBytes } from 'node:crypto';
import type { Decision, Store } from 'sluice';
import type { ReservationRecords } from 'sluice/redis';
import {
  type CheckReservations,
  checkedId,
  mismatch,
  move,
  refusal,
  type Settled,
  tooMany,
} from './check-reservation-parts.js';

/** How often an instance claims lapsed records of every instance (its own lapsed ones claim sooner). */
const CLAIM_EVERY_MS = 1000;
/** Records claimed at most per sweep; a full batch lets the next call sweep again at once. */
const CLAIM_BATCH = 1000;

/** A record as kept: the stored key, the policy's id, the cost, whether it was free, its expiry, when it was taken. */
interface Recorded {
  readonly k: string;
  readonly p: string;
  readonly c: number;
  readonly f: boolean;
  readonly e: number;
  /** The reserve's time; absent in a record an older version wrote (its give-back is then at the settle's time). */
  readonly t?: number;
}

/** What the recorded book needs. */
export interface RecordedBookOptions {
  readonly store: Store;
  readonly records: ReservationRecords;
  readonly ttlMs: number;
  readonly max: number;
}

/** The book of reservations recorded in the store; see the file's comment. */
export function createRecordedCheckReservations(options: RecordedBookOptions): CheckReservations {
  const { store, records, ttlMs, max } = options;
  // This instance's open reservations (id -> expiry, in expiry order): its bound, and its answers for
  // ids another instance settled or claimed.
  const mine = new Map<string, number>();
  const finished = new Map<string, 'settled' | 'expired'>();
  let claimedAt = Number.NEGATIVE_INFINITY;
  const remember = (id: string, how: 'settled' | 'expired') => {
    mine.delete(id);
    finished.set(id, how);
    if (finished.size > max) finished.delete(finished.keys().next().value as string);
  };
  // Lapsed records stay charged in full: claiming one only takes it out (and says "expired" after).
  const claim = async (nowMs: number) => {
    const oldest = mine.values().next();
    const ownLapsed = oldest.done !== true && oldest.value <= nowMs;
    if (!ownLapsed && nowMs - claimedAt < CLAIM_EVERY_MS) return;
    const claimed = await records.takeExpired(nowMs, CLAIM_BATCH);
    claimedAt = claimed.length < CLAIM_BATCH ? nowMs : Number.NEGATIVE_INFINITY;
    for (const { id } of claimed) remember(id, 'expired');
    for (const [id, expiresAt] of mine) {
      if (expiresAt > nowMs) break;
      remember(id, 'expired');
    }
  };
  // Gone from the store: ours settled elsewhere or claimed after its expiry; else what we remember.
  const gone = (id: string, atMs: number) => {
    const at = mine.get(id);
    const how = finished.get(id) ?? (at === undefined ? undefined : at <= atMs ? 'expired' : 'settled');
    if (how !== undefined) remember(id, how);
    return refusal(how);
  };

  return {
    async reserve(storedKey, policy, cost, atMs, free) {
      await claim(atMs);
      if (mine.size >= max) throw tooMany(max);
      const decision: Decision = free
        ? { allowed: true, limit: policy.limit, remaining: policy.limit, resetMs: 0, retryAfterMs: 0 }
        : await store.check(storedKey, policy, cost, atMs, true);
      if (!decision.allowed) return { decision };
      const id = randomBytes(16).toString('base64url');
      const expiresAt = atMs + ttlMs;
      const record: Recorded = { k: storedKey, p: policy.id, c: cost, f: free, e: expiresAt, t: atMs };
      try {
        await records.add(id, expiresAt, JSON.stringify(record));
      } catch (error) {
        // Not recorded, so never settleable: what it took goes back, and the store's failure is answered.
        if (!free) await Promise.resolve(store.refund(storedKey, policy, cost, atMs)).catch(() => {});
        throw error;
      }
      mine.set(id, expiresAt);
      return { decision, reservation: { id, expiresAt } };
    },
    async settle(rawId, storedKey, policy, actual, atMs) {
      const id = checkedId(rawId);
      await claim(atMs);
      const text = await records.take(id);
      if (text === undefined) throw gone(id, atMs);
      const record = recordOf(text);
      if (record === undefined) throw refusal(undefined);
      if (record.e <= atMs) {
        // Lapsed but not claimed yet: it stays charged in full, as if the sweep had come first.
        remember(id, 'expired');
        throw refusal('expired');
      }
      if (record.k !== storedKey || record.p !== policy.id) {
        await records.add(id, record.e, text);
        throw mismatch();
      }
      remember(id, 'settled');
      if (record.f) return { settled: true, reserved: record.c, charged: 0, refunded: 0 } satisfies Settled;
      const taken = Number.isFinite(record.t) ? { takenAtMs: record.t as number } : {};
      return move(store, { storedKey, policy, cost: record.c, ...taken }, actual ?? 0, atMs);
    },
    get outstanding() {
      return mine.size;
    },
  };
}

/** A record read back, or undefined when it is not one of ours (never trusted blindly: it came from Redis). */
function recordOf(text: string): Recorded | undefined {
  try {
    const r = JSON.parse(text) as Partial<Recorded>;
    const ok =
      typeof r.k === 'string' &&
      typeof r.p === 'string' &&
      typeof r.f === 'boolean' &&
      Number.isSafeInteger(r.c) &&
      (r.c as number) >= 0 &&
      Number.isFinite(r.e);
    return ok ? (r as Recorded) : undefined;
  } catch {
    return undefined;
  }
}
