/**
 * envoy ratelimit's environment variables set while sluice was not started the envoy way: they do nothing
 * then, so the operator is told once, with the switch that makes them count.
 */
import { ENVOY_SETTINGS } from './envoy-settings-table.js';

/** Names sluice reads itself in every mode (with its own meaning), or that start envoy mode by themselves. */
const NOT_ENVOY_ONLY: ReadonlySet<string> = new Set([
  'HOST',
  'PORT',
  'GRPC_PORT',
  'LOG_LEVEL',
  'REDIS_URL',
  'RUNTIME_ROOT',
  'CONFIG_TYPE',
]);

/** The settings only envoy mode reads. */
const ENVOY_ONLY: readonly string[] = ENVOY_SETTINGS.map((s) => s.name).filter((n) => !NOT_ENVOY_ONLY.has(n));

/**
 * One warning naming every envoy-only setting present in `env` (e.g. `MERGE_DOMAIN_CONFIG`,
 * `LIMIT_RESPONSE_HEADERS_ENABLED`) and `--envoy-compat`, or undefined when none is set. Call it only
 * outside envoy mode.
 */
export function strayEnvoySettingsWarning(env: Readonly<Record<string, string | undefined>>): string | undefined {
  const set = ENVOY_ONLY.filter((name) => env[name] !== undefined);
  if (set.length === 0) return undefined;
  const they = set.length === 1 ? 'is an envoy ratelimit setting' : 'are envoy ratelimit settings';
  return (
    `${set.join(', ')} ${they}, read only in envoy mode: as started, sluice ignores ${set.length === 1 ? 'it' : 'them'}. ` +
    "Start with --envoy-compat to honour them (see docs/envoy.md), or unset them and use sluice serve's flags."
  );
}
