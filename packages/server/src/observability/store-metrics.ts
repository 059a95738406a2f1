/** The store's metrics, read from its `stats()` when scraped: local cache hits, evictions, refusals, keys, bytes, leases. */
import { Counter, Gauge, type Registry } from 'prom-client';

/** Counters a store may expose (the Redis store's local over-limit cache, the memory store's keys). */
export type StoreStats = () => Readonly<Record<string, number>> | undefined;

/** Registers the store-side counters and gauges (labelled with the store's name) in `registry`. */
export function registerStoreMetrics(registry: Registry, store: string, storeStats: StoreStats | undefined): void {
  // Store-side counters (the Redis store's local over-limit cache, the memory store's evictions, the
  // Redis store's refused writes) are read from store.stats() when scraped.
  const storeCounter = (name: string, help: string, field: string) => {
    let last = 0;
    const counter = new Counter({
      name,
      help,
      labelNames: ['store'] as const,
      registers: [registry],
      collect() {
        const value = storeStats?.()?.[field];
        if (typeof value === 'number' && value > last) {
          this.inc({ store }, value - last);
          last = value;
        }
      },
    });
    counter.inc({ store }, 0);
  };
  storeCounter(
    'sluice_local_cache_hits_total',
    'Decisions answered by the local over-limit cache without a store round trip.',
    'localCacheHits',
  );
  storeCounter(
    'sluice_store_evictions_total',
    'Keys the memory store forgot to stay within maxKeys/maxBytes (each started afresh), least used first.',
    'evictions',
  );
  storeCounter(
    'sluice_store_evicted_at_limit_total',
    'Evictions of keys at their limit or blocked: the memory store is too small for the keys really limited.',
    'evictedAtLimit',
  );
  storeCounter(
    'sluice_store_leases_refused_total',
    'Concurrency leases the memory store refused because the leases held filled their half of maxBytes (or maxKeys).',
    'leasesRefused',
  );
  storeCounter(
    'sluice_store_refused_total',
    'Requests Redis could not decide because it refused the write they needed (maxmemory, read-only replica).',
    'refused',
  );
  new Gauge({
    name: 'sluice_store_keys',
    help: 'Keys held by the memory store (absent for other stores).',
    labelNames: ['store'] as const,
    registers: [registry],
    collect() {
      const keys = storeStats?.()?.keys;
      if (typeof keys === 'number') this.set({ store }, keys);
    },
  });
  // The memory store's own accounting (absent for other stores): what --memory-max-bytes bounds.
  for (const [name, help, field] of [
    ['sluice_store_bytes', 'Estimated bytes of state the memory store holds (keys, logs, blocks, leases).', 'bytes'],
    ['sluice_store_leases', 'Concurrency leases the memory store holds (at most half of maxBytes worth).', 'leases'],
  ] as const) {
    new Gauge({
      name,
      help,
      labelNames: ['store'] as const,
      registers: [registry],
      collect() {
        const value = storeStats?.()?.[field];
        if (typeof value === 'number') this.set({ store }, value);
      },
    });
  }
}
