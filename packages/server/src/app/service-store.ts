/** The service's store: the one given, or one built from `store` options (memory, Redis, per-second Redis, multi-region, SQL). */
import type { Store } from 'sluice';
import { createMemoryStore } from 'sluice';
import { createMultiRegionBackend, type RegionsView } from '../backends/multi-region-backend.js';
import { createPerSecondStore } from '../backends/per-second-store.js';
import { createRedisBackend, type RedisOptions, type StoreBackend } from '../backends/redis-backend.js';
import { createSqlBackend } from '../backends/sql-backend.js';
import type { Logger } from '../observability/logger.js';
import { isStoreInstance, type ServiceOptions } from './service-options.js';

/** A store backend, and the regions' view with a multi-region store. */
export interface ServiceStore extends StoreBackend {
  readonly regions?: () => RegionsView;
  /** Closes the store when the service owns it, then what the backend opened. */
  shutdown(): Promise<void>;
}

/** Opens the store `options.store` asks for (connecting to Redis when it does). */
export async function openServiceStore(options: ServiceOptions['store'], logger: Logger): Promise<ServiceStore> {
  const backend = await openBackend(options, logger);
  const regions = 'regions' in backend ? (backend.regions as () => RegionsView) : undefined;
  return {
    ...backend,
    ...(regions === undefined ? {} : { regions: () => regions.call(backend) }),
    async shutdown() {
      if (backend.owned) await backend.store.close();
      await backend.close();
    },
  };
}

async function openBackend(options: ServiceOptions['store'], logger: Logger): Promise<StoreBackend> {
  if (isStoreInstance(options)) return { store: options, owned: false, close: async () => {} };
  if (options?.multiRegion !== undefined) return createMultiRegionBackend(options.multiRegion, logger);
  if (options?.sql !== undefined) return createSqlBackend(options.sql, logger);
  if (options?.redis === undefined) {
    return { store: createMemoryStore(options?.memory), owned: true, close: async () => {} };
  }
  // With two Redis, every log line of one says which.
  const perSecond = options.redisPerSecond;
  const main = await createRedisBackend(options.redis, perSecond ? logger.child({ redis: 'main' }) : logger);
  return perSecond === undefined ? main : withPerSecond(main, perSecond, logger);
}

/** The main Redis backend joined by a per-second one: per-second limits go to the second (envoy's REDIS_PERSECOND). */
async function withPerSecond(main: StoreBackend, options: RedisOptions, logger: Logger): Promise<StoreBackend> {
  let second: StoreBackend;
  try {
    second = await createRedisBackend(options, logger.child({ redis: 'per-second' }));
  } catch (error) {
    await main.store.close();
    await main.close();
    throw error;
  }
  const pings = [main.ping, second.ping].filter((p) => p !== undefined);
  return {
    store: createPerSecondStore(main.store, second.store),
    owned: true,
    // Health follows both: a decision may need either.
    ping: () => Promise.all(pings.map((p) => p())),
    close: async () => {
      await Promise.all([main.close(), second.close()]);
    },
  };
}

/** The store's own counters (`stats()`), for the metrics, when it has them. */
export function storeStats(store: Store): Readonly<Record<string, number>> | undefined {
  const stats = (store as Store & { stats?: () => unknown }).stats;
  if (typeof stats !== 'function') return undefined;
  const value = stats.call(store);
  return typeof value === 'object' && value !== null ? (value as Record<string, number>) : undefined;
}
