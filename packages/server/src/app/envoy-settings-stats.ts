/**
 * envoy ratelimit's stats settings in envoy mode: USE_STATSD (default true, as envoy), STATSD_HOST,
 * STATSD_PORT, STATS_FLUSH_INTERVAL, USE_PROMETHEUS, PROMETHEUS_RESPONSE_TIME_AS_MILLISECONDS and EXTRA_TAGS,
 * read into the options of envoy's own stat names (sluice's metrics are set up beside them).
 */
import type { EnvoyStatsOptions } from '../observability/envoy-stats/envoy-telemetry.js';
import { bad, type Env, goBool, goDuration, port } from './envoy-settings-parse.js';

/** Labels envoy's Prometheus names use themselves: an EXTRA_TAGS key may not be one. */
const ENVOY_LABELS = new Set(['domain', 'key1', 'key2', 'err_type', 'grpc_method', 'le']);
/** Most EXTRA_TAGS, and the longest value: every statsd line and series carries them. */
export const MAX_EXTRA_TAGS = 20;
export const MAX_EXTRA_TAG_LENGTH = 128;
/** STATS_FLUSH_INTERVAL's bounds: envoy's ticker refuses 0; an hour keeps statsd's view current. */
const MIN_FLUSH_MS = 100;
const MAX_FLUSH_MS = 3_600_000;

function checkTags(tags: Readonly<Record<string, string>>): void {
  const entries = Object.entries(tags);
  if (entries.length > MAX_EXTRA_TAGS) throw bad('EXTRA_TAGS', `${entries.length} tags; at most ${MAX_EXTRA_TAGS}`);
  for (const [key, value] of entries) {
    if (ENVOY_LABELS.has(key)) throw bad('EXTRA_TAGS', `'${key}' is already a label of envoy ratelimit's own metrics`);
    if (key.length > MAX_EXTRA_TAG_LENGTH || value.length > MAX_EXTRA_TAG_LENGTH) {
      throw bad('EXTRA_TAGS', `'${key.slice(0, 32)}': keys and values are at most ${MAX_EXTRA_TAG_LENGTH} characters`);
    }
  }
}

/**
 * envoy's stats options from the environment, or undefined when none is on (DISABLE_STATS, or
 * USE_STATSD=false without USE_PROMETHEUS). envoy refuses USE_STATSD and USE_PROMETHEUS together and so
 * every working deployment that sets USE_PROMETHEUS also sets USE_STATSD=false: left unset beside it, statsd
 * is off; set to true, sluice does both (and says so).
 */
export function envoyStatsFromEnv(
  env: Env,
  extraTags: Readonly<Record<string, string>>,
  warnings: string[],
): EnvoyStatsOptions | undefined {
  if (goBool(env, 'DISABLE_STATS', false)) return undefined;
  checkTags(extraTags);
  const prometheus = goBool(env, 'USE_PROMETHEUS', false);
  const statsdSet = env.USE_STATSD !== undefined && env.USE_STATSD !== '';
  const statsd = goBool(env, 'USE_STATSD', !prometheus);
  if (statsd && prometheus && statsdSet) {
    warnings.push('USE_STATSD and USE_PROMETHEUS are both true: envoy ratelimit refuses that; sluice does both');
  }
  if (goBool(env, 'USE_DOG_STATSD', false)) {
    warnings.push('USE_DOG_STATSD=true: sluice sends plain statsd (USE_STATSD), not DogStatsD tags');
  }
  if (env.PROMETHEUS_MAPPER_YAML) {
    warnings.push('PROMETHEUS_MAPPER_YAML is not read: envoy ratelimit’s default mapping names the series');
  }
  const flushIntervalMs = goDuration(env, 'STATS_FLUSH_INTERVAL', 10_000);
  if (flushIntervalMs < MIN_FLUSH_MS || flushIntervalMs > MAX_FLUSH_MS) {
    throw bad('STATS_FLUSH_INTERVAL', `'${env.STATS_FLUSH_INTERVAL}' is not from 100ms to 1h`);
  }
  if (!statsd && !prometheus) return undefined;
  const configType = (env.CONFIG_TYPE || 'FILE').toUpperCase();
  return {
    ...(statsd
      ? { statsd: { host: env.STATSD_HOST || 'localhost', port: port(env, 'STATSD_PORT', 8125), flushIntervalMs } }
      : {}),
    ...(prometheus
      ? {
          prometheus: {
            responseTimeAsMilliseconds: goBool(env, 'PROMETHEUS_RESPONSE_TIME_AS_MILLISECONDS', false),
          },
        }
      : {}),
    ...(Object.keys(extraTags).length > 0 ? { extraTags } : {}),
    countFirstLoad: configType === 'FILE',
  };
}
