/**
 * `createRedisReservationRecords`: pending reservations kept in Redis beside the counters — a hash of
 * records and a sorted set by expiry under one hash tag (one Cluster slot), changed by one atomic script.
 */
import { SluiceError } from '../../core/errors.js';
import type { ReservationRecords } from '../reservation-records.js';
import { createTransport, type RedisClientLike } from './client.js';
import { LUA_SOURCES } from './lua-sources.js';

/** Options of {@link createRedisReservationRecords}. */
export interface RedisReservationRecordsOptions {
  /** The client the store uses (or any other on the same Redis). */
  client: RedisClientLike;
  /** Prepended to the two keys, as the store's `prefix`. @default 'sluice:' */
  prefix?: string;
  /** Names the table, for two limiters on one Redis that must not share one. @default 'reservations' */
  name?: string;
}

const SCRIPT = LUA_SOURCES['redis/reservation-records'];

/**
 * Reservation records in Redis, for `reservationStore` (`createReservations`, `createTokenLimiter`):
 * a reservation left unsettled by a process that died is charged or refunded by `onExpire` on another
 * process's next call, and a settle from any process finds it.
 *
 * @example
 * const tokens = createTokenLimiter({ totalTokens: { limit: 25_000, period: '1m' }, store,
 *   onExpire: 'refund', reservationStore: createRedisReservationRecords({ client }) });
 */
export function createRedisReservationRecords(options: RedisReservationRecordsOptions): ReservationRecords {
  const prefix = options.prefix ?? 'sluice:';
  const name = options.name ?? 'reservations';
  if (/[{}]/.test(prefix) || /[{}]/.test(name))
    throw new SluiceError('ERR_SLUICE_INVALID_OPTION', 'prefix and name must not contain { or }', {
      option: 'prefix',
    });
  const transport = createTransport(options.client);
  const index = `${prefix}{resv:${name}}:expiry`;
  const records = `${prefix}{resv:${name}}:records`;
  const run = (...args: string[]) => transport.send(['EVAL', SCRIPT, '2', index, records, ...args], index);
  const text = (v: unknown) =>
    typeof v === 'string' ? v : v instanceof Uint8Array ? new TextDecoder().decode(v) : String(v);
  return {
    async add(id, expiresAtMs, record) {
      await run('add', id, String(expiresAtMs), record);
    },
    async take(id) {
      const rec = await run('take', id);
      return rec === null || rec === undefined || rec === false ? undefined : text(rec);
    },
    async takeExpired(nowMs, max) {
      const flat = (await run('expired', String(nowMs), String(max))) as unknown[] | null;
      const out: { id: string; record: string }[] = [];
      for (let i = 0; flat !== null && i + 1 < flat.length; i += 2)
        out.push({ id: text(flat[i]), record: text(flat[i + 1]) });
      return out;
    },
  };
}
