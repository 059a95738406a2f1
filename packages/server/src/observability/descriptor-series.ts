/** Per-value Prometheus series for `detailed_metric` and `value_to_metric` rules, capped with an overflow series. */
import { Counter, type Registry } from 'prom-client';
import type { DecisionHub } from './decision-events.js';

/** The label value that stands for every descriptor past the series cap. */
export const OVERFLOW_DESCRIPTOR = '_overflow_';

/** Options of {@link registerDescriptorSeries}. */
export interface DescriptorSeriesOptions {
  /**
   * Most distinct descriptor values kept as series of their own; later values are counted under
   * `descriptor="_overflow_"`, so a client sending random values cannot grow the metrics without bound.
   * @default 10_000
   */
  maxSeries?: number;
}

/**
 * The per-value series envoy ratelimit's `detailed_metric` and `value_to_metric` ask for:
 * `sluice_descriptor_decisions_total{domain, descriptor, outcome}`, where `descriptor` is envoy's stats
 * key without the domain (`key1_value1.subkey`). Only rules with one of those options produce them; the
 * per-rule series (`sluice_decisions_total`) are unchanged. Returns a function that unsubscribes.
 */
export function registerDescriptorSeries(
  registry: Registry,
  hub: DecisionHub,
  options: DescriptorSeriesOptions = {},
): () => void {
  const maxSeries = options.maxSeries ?? 10_000;
  const decisions = new Counter({
    name: 'sluice_descriptor_decisions_total',
    help: 'Decisions per descriptor value, for rules with detailed_metric or value_to_metric (envoy stats keys), by outcome.',
    labelNames: ['domain', 'descriptor', 'outcome'] as const,
    registers: [registry],
  });
  const dropped = new Counter({
    name: 'sluice_descriptor_series_overflow_total',
    help: 'Decisions counted under descriptor="_overflow_" because the per-value series cap was reached.',
    registers: [registry],
  });
  const seen = new Set<string>();
  return hub.subscribe((event) => {
    const key = event.metricKey;
    if (key === undefined) return;
    const prefix = `${event.domain}.`;
    let descriptor = key.startsWith(prefix) ? key.slice(prefix.length) : key;
    if (!seen.has(descriptor)) {
      if (seen.size >= maxSeries) {
        descriptor = OVERFLOW_DESCRIPTOR;
        dropped.inc();
      } else seen.add(descriptor);
    }
    decisions.inc({ domain: event.domain, descriptor, outcome: event.outcome });
  });
}
