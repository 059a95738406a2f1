/** OpenTelemetry metrics beside Prometheus: decisions counted from the start, pushed over OTLP by the SDK, which is imported only when asked for. */
import type { DecisionHub } from '../decision-events.js';
import type { Logger } from '../logger.js';
import { createDecisionTally } from './decision-tally.js';
import type { OtelMetricsOptions } from './otel-metrics-options.js';

/** The running export. */
export interface OtelMetrics {
  /** Settles once the SDK has started (true) or failed to (false, logged). */
  readonly ready: Promise<boolean>;
  /** Stops counting and pushes the last counts. */
  close(): Promise<void>;
}

/** Counts `hub`'s decisions now, and pushes them over OTLP once the SDK has loaded. */
export function startOtelMetrics(options: OtelMetricsOptions, hub: DecisionHub, logger?: Logger): OtelMetrics {
  const tally = createDecisionTally();
  const unsubscribe = hub.subscribe(tally.count);
  const provider = import('./otel-metrics-sdk.js').then((m) => m.createMetricsExport(options, tally, logger));
  const ready = provider.then(
    () => true,
    (error: unknown) => {
      logger?.error({ err: error }, 'metrics: the OpenTelemetry SDK did not start; no OTLP metrics');
      return false;
    },
  );
  return {
    ready,
    async close() {
      unsubscribe();
      if (await ready) await (await provider).shutdown();
    },
  };
}
