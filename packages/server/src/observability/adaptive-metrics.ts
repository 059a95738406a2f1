/**
 * An adaptive limiter's metrics (the gateway's `--adaptive`), read from its `stats()` when scraped: the
 * current limit, requests in flight and waiting, and requests admitted and shed per priority (labelled with
 * the priorities' names, the rules' own ones included).
 */
import { Counter, Gauge, type Registry } from 'prom-client';
import type { AdaptiveStats } from 'sluice/adaptive';

/** Registers the gauges and counters of the adaptive limiter `limiter` (a label: `gateway`) in `registry`. */
export function registerAdaptiveMetrics(registry: Registry, limiter: string, stats: () => AdaptiveStats): void {
  const gauge = (name: string, help: string, read: (s: AdaptiveStats) => number) =>
    new Gauge({
      name,
      help,
      labelNames: ['limiter'] as const,
      registers: [registry],
      collect() {
        this.set({ limiter }, read(stats()));
      },
    });
  gauge('sluice_adaptive_limit', 'The adaptive concurrency limit now (requests in flight it admits).', (s) => s.limit);
  gauge('sluice_adaptive_in_flight', 'Requests holding a place of the adaptive limit.', (s) => s.inFlight);
  gauge('sluice_adaptive_queued', 'Requests waiting for a place of the adaptive limit.', (s) => s.queued);
  // The limiter counts from its start; the counters follow by the difference since the last scrape.
  const counter = (name: string, help: string, field: 'admitted' | 'shed') => {
    const last = new Map<string, number>();
    new Counter({
      name,
      help,
      labelNames: ['limiter', 'priority'] as const,
      registers: [registry],
      collect() {
        for (const [priority, figures] of Object.entries(stats().priorities)) {
          const value = figures[field];
          // Never down (a counter), whatever the stats say: the gateway's carry over reloads, by name.
          const step = value - (last.get(priority) ?? 0);
          if (step > 0) this.inc({ limiter, priority }, step);
          last.set(priority, Math.max(value, last.get(priority) ?? 0));
        }
      },
    });
  };
  counter('sluice_adaptive_admitted_total', 'Requests the adaptive limit admitted, by priority.', 'admitted');
  counter(
    'sluice_adaptive_shed_total',
    'Requests the adaptive limit shed (503), by priority: overload, counted apart from 429s.',
    'shed',
  );
}
