/** The gateway's token budget metrics (`llm:` rules): reservations held now, and how requests were settled. */
import { Counter, Gauge, type Registry } from 'prom-client';

/** How an LLM request through the gateway ended for its budget. */
export type LlmSettlement = 'usage' | 'estimate' | 'cancelled' | 'refused';

/** Counts settlements; read by `/metrics`. */
export interface LlmMetrics {
  settled(how: LlmSettlement): void;
}

/** Registers `sluice_llm_reservations_outstanding` (read when scraped) and `sluice_llm_requests_total{settled}`. */
export function registerLlmMetrics(registry: Registry, outstanding: () => number): LlmMetrics {
  new Gauge({
    name: 'sluice_llm_reservations_outstanding',
    help: 'Token reservations of gateway requests not yet settled (streams in flight).',
    registers: [registry],
    collect() {
      this.set(outstanding());
    },
  });
  const counter = new Counter({
    name: 'sluice_llm_requests_total',
    help: 'Gateway LLM requests by how their tokens were settled: usage (reported), estimate, cancelled, refused.',
    labelNames: ['settled'] as const,
    registers: [registry],
  });
  return { settled: (how) => counter.inc({ settled: how }) };
}
