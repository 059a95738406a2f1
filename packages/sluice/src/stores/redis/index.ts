/**
 * `sluice/redis`: the Redis store. Counters live in Redis (standalone, Sentinel or Cluster), decided
 * by one Lua script run per decision, so every application server shares the same limits.
 * @packageDocumentation
 */

export type { ReservationRecords } from '../reservation-records.js';
export type { IoRedisLike, NodeRedisClientLike, NodeRedisClusterLike, RedisClientLike } from './client.js';
export { escapeKey, slotOf } from './keys.js';
export type { RedisStore, RedisStoreOptions, RedisStoreStats } from './redis-store.js';
export { createRedisStore } from './redis-store.js';
export { createRedisReservationRecords, type RedisReservationRecordsOptions } from './reservation-records.js';
