/**
 * envoy ratelimit's stats key of a matched descriptor (`domain.key_value.key2`), which its
 * `detailed_metric`, `value_to_metric` and `share_threshold` options shape. sluice's own metrics are keyed
 * by rule; this key names the per-value series those options ask for.
 */

/** How one level of a descriptor path was matched, and the options of the config node it matched. */
export interface MetricLevel {
  readonly key: string;
  /** The config value (a wildcard pattern keeps its `*`); absent for a bare key. */
  readonly value?: string;
  readonly wildcard: boolean;
  readonly valueToMetric: boolean;
  readonly shareThreshold: boolean;
}

function part(key: string, value: string | undefined): string {
  return value === undefined || value === '' ? key : `${key}_${value}`;
}

/** The value a level contributes to a key that is not detailed. */
function levelValue(level: MetricLevel, runtime: string): string | undefined {
  if (level.wildcard) return level.shareThreshold || !level.valueToMetric ? level.value : runtime;
  if (level.value !== undefined) return runtime;
  return level.valueToMetric ? runtime : undefined;
}

/**
 * The stats key of `entries` matched along `levels` (one level per entry), as envoy ratelimit builds it.
 * `detailed` (the leaf's `detailed_metric`) puts every runtime value in, except that an entry matched by
 * a shared-threshold wildcard shows the pattern; otherwise a level shows its configured value, its
 * wildcard pattern, or the runtime value where `value_to_metric` asks for it.
 */
export function metricKey(
  domain: string,
  levels: readonly MetricLevel[],
  entries: readonly { key: string; value: string }[],
  detailed: boolean,
): string {
  let out = domain;
  const shared = levels.some((l) => l.wildcard && l.shareThreshold);
  for (const [i, entry] of entries.entries()) {
    const level = levels[i];
    if (level === undefined) out += `.${entry.key}`;
    else if (level.wildcard && level.shareThreshold) out += `.${part(entry.key, level.value)}`;
    else if (detailed) {
      // Without a shared wildcard, envoy joins key and value with `_` even for an empty value.
      out += shared ? `.${part(entry.key, entry.value)}` : `.${entry.key}_${entry.value}`;
    } else out += `.${part(entry.key, levelValue(level, entry.value))}`;
  }
  return out;
}
