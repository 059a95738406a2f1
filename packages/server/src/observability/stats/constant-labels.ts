/** Constant labels on every Prometheus series (envoy ratelimit's EXTRA_TAGS). */
import type { Registry } from 'prom-client';
import { SluiceError } from 'sluice';

const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/;

/**
 * Adds constant labels to every series of `registry` (envoy ratelimit's EXTRA_TAGS, which it adds to every
 * stat): e.g. `{ env: 'prod' }` puts `env="prod"` on each line of /metrics. A name that is not a
 * Prometheus label name, starts with `__` (reserved), or is already a label of one of sluice's metrics
 * (it would make two values for one label) is refused, naming it.
 */
export function applyConstantLabels(registry: Registry, labels: Readonly<Record<string, string>>): void {
  const taken = new Set(
    registry.getMetricsAsArray().flatMap((m) => (m as unknown as { labelNames?: string[] }).labelNames ?? []),
  );
  for (const name of Object.keys(labels)) {
    const why = !LABEL_NAME.test(name)
      ? 'is not a Prometheus label name (letters, digits and _, not starting with a digit)'
      : name.startsWith('__')
        ? 'starts with __, which Prometheus reserves'
        : taken.has(name)
          ? "is already a label of sluice's metrics"
          : undefined;
    if (why !== undefined) {
      throw new SluiceError('ERR_SLUICE_INVALID_OPTION', `metricsLabels: '${name}' ${why}`, {
        option: 'metricsLabels',
      });
    }
  }
  registry.setDefaultLabels({ ...labels });
}
