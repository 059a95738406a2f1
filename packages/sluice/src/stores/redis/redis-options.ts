/** The Redis store's options checked (coded errors naming the option) and filled in with their defaults. */
import { SluiceError } from '../../core/errors.js';
import { validatePrefix } from './keys.js';
import type { RedisStoreOptions } from './redis-store.js';

/** The Redis store's options, checked and with defaults. */
export interface ResolvedRedisStoreOptions {
  readonly prefix: string;
  /** True when Redis's clock decides (the default), false with `clock: 'client'`. */
  readonly serverClock: boolean;
  readonly timeoutMs: number;
  readonly connectTimeoutMs: number;
  /** Most keys of the local over-limit cache; undefined when it is off. */
  readonly cacheKeys: number | undefined;
  readonly batch: boolean;
}

/** Checks the options a Redis store is created with (the client is checked by createTransport). */
export function resolveRedisStoreOptions(options: RedisStoreOptions): ResolvedRedisStoreOptions {
  if (options === null || typeof options !== 'object') {
    throw new SluiceError('ERR_SLUICE_INVALID_OPTION', 'createRedisStore: expected an options object');
  }
  const prefix = validatePrefix(options.prefix ?? 'sluice:');
  const clock = options.clock ?? 'server';
  if (clock !== 'server' && clock !== 'client') {
    throw new SluiceError('ERR_SLUICE_INVALID_OPTION', `clock: expected 'server' or 'client', got ${String(clock)}`, {
      option: 'clock',
    });
  }
  const timeoutMs = options.timeoutMs ?? 50;
  if (typeof timeoutMs !== 'number' || !(timeoutMs >= 1) || timeoutMs > 2 ** 31 - 1) {
    throw new SluiceError('ERR_SLUICE_INVALID_OPTION', 'timeoutMs: expected a number of ms ≥ 1', {
      option: 'timeoutMs',
    });
  }
  const connectTimeoutMs = options.connectTimeoutMs ?? 5000;
  if (
    typeof connectTimeoutMs !== 'number' ||
    !Number.isInteger(connectTimeoutMs) ||
    connectTimeoutMs < 0 ||
    connectTimeoutMs > 2 ** 31 - 1
  ) {
    throw new SluiceError('ERR_SLUICE_INVALID_OPTION', 'connectTimeoutMs: expected a whole number of ms ≥ 0', {
      option: 'connectTimeoutMs',
    });
  }
  if (options.onError !== undefined && typeof options.onError !== 'function') {
    throw new SluiceError('ERR_SLUICE_INVALID_OPTION', 'onError: expected a function', { option: 'onError' });
  }
  const cacheOption = options.localCache ?? true;
  const cacheKeys = typeof cacheOption === 'object' ? (cacheOption.maxKeys ?? 10_000) : 10_000;
  if (!Number.isInteger(cacheKeys) || cacheKeys < 1) {
    throw new SluiceError('ERR_SLUICE_INVALID_OPTION', 'localCache.maxKeys: expected a whole number ≥ 1', {
      option: 'localCache.maxKeys',
    });
  }
  return {
    prefix,
    serverClock: clock === 'server',
    timeoutMs,
    connectTimeoutMs,
    cacheKeys: cacheOption === false ? undefined : cacheKeys,
    batch: options.batch ?? true,
  };
}
