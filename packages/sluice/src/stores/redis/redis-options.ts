/** The Redis store's options checked (coded errors naming the option) and filled in with their defaults. */
import { SluiceError } from '../../core/errors.js';
import type { RedisClientLike } from './client.js';
import { validatePrefix } from './keys.js';
import { localCacheKeys } from './local-cache.js';

/** Options of {@link createRedisStore}. */
export interface RedisStoreOptions {
  /** An ioredis `Redis` or `Cluster`, or a node-redis client or cluster, already configured. */
  client: RedisClientLike;
  /** Prepended to every key; must not contain `{` or `}`. @default 'sluice:' */
  prefix?: string;
  /**
   * Whose clock decides: `'server'` uses Redis's (`TIME`, or a stored key's expiry), so application
   * servers with skewed clocks agree; `'client'` uses the `nowMs` the limiter passes (tests with a manual
   * clock, or Redis versions that cannot write after `TIME` in a script). @default 'server'
   */
  clock?: 'server' | 'client';
  /** Longest wait for Redis, in ms; past it the call fails with ERR_SLUICE_STORE_TIMEOUT. @default 50 */
  timeoutMs?: number;
  /**
   * How long, from the store's creation, commands wait for the client's first connection (and the
   * scripts' loading) instead of failing: the first requests of a process that starts under load are
   * decided by Redis, exactly, not by the failure policy. 0 = never wait. A client that was connected
   * and lost its connection still fails fast. @default 5000
   */
  connectTimeoutMs?: number;
  /**
   * Called with store failures (timeouts, Redis errors, a lost connection — reported once per outage,
   * not once per call while the client is known to be down), e.g. to log or count them.
   */
  onError?: (error: SluiceError) => void;
  /**
   * Answer keys known to be over their limit in-process, without a round trip, until they can pass
   * again. `{ maxKeys }` bounds it. @default true (10 000 keys)
   */
  localCache?: boolean | { maxKeys?: number };
  /**
   * Send the checks that arrive in the same event-loop turn as one script call per algorithm (and the multi-limit
   * checks as one more): independent decisions, in arrival order, with fewer commands for Redis and for
   * the client to encode — and under a burst one reply instead of hundreds queued behind each other,
   * which would each risk the timeout. @default true
   */
  batch?: boolean;
}

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
  const cacheKeys = localCacheKeys(options.localCache);
  return {
    prefix,
    serverClock: clock === 'server',
    timeoutMs,
    connectTimeoutMs,
    cacheKeys,
    batch: options.batch ?? true,
  };
}
