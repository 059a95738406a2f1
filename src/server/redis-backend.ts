import { SluiceError } from '../core/errors.js';
import type { Store } from '../stores/store.js';
import type { Logger } from './logger.js';

/** How to reach Redis: one server by URL, or a Cluster by its seed nodes. */
export interface RedisOptions {
  /** `redis://[user:pass@]host:port[/db]` (or `rediss://`). */
  url?: string;
  /** Cluster seed nodes, `host:port` each. */
  cluster?: readonly string[];
  /** Key prefix of every counter. @default the store's */
  prefix?: string;
}

/** A store and what the service needs to run it. */
export interface StoreBackend {
  readonly store: Store;
  /** Resolves when the store's server answers (health checks); absent for in-process stores. */
  readonly ping?: () => Promise<unknown>;
  /** True when the service created the store and must close it. */
  readonly owned: boolean;
  /** Releases what the backend opened besides the store (the Redis connection). */
  close(): Promise<void>;
}

/** Builds the Redis store from `--redis` / `--redis-cluster` (lands with the Redis store). */
export async function createRedisBackend(_options: RedisOptions, _logger: Logger): Promise<StoreBackend> {
  throw new SluiceError('ERR_SLUICE_INVALID_OPTION', 'redis: the Redis store is not available in this build yet');
}
