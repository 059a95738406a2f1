/**
 * `sluice serve`'s flags and environment → service options (flags win over the environment; in envoy
 * mode the environment is envoy ratelimit's, read by app/envoy-settings.ts).
 */
import { parseArgs } from 'node:util';
import { parseDuration } from 'sluice';
import type { FailMode } from 'sluice/rules';
import { envoyServiceOptions, isEnvoyStart } from '../../app/envoy-settings.js';
import type { StoreOptions } from '../../app/service-options.js';
import { strayEnvoySettingsWarning } from '../../app/stray-envoy-settings.js';
import { sqlKind } from '../../backends/sql-backend.js';
import type { LogLevel, ServiceOptions } from '../../index.js';
import { LOG_LEVELS } from '../../index.js';
import { otelMetricsFromEnv } from '../../observability/otel-metrics/otel-metrics-options.js';
import { applyLimitFlags, LIMIT_FLAGS } from './limit-flags.js';
import { applyCaptureFlags, CAPTURE_FLAGS } from './serve-capture.js';
import { MULTI_REGION_FLAGS, multiRegionOptions } from './serve-multi-region.js';

/** The parseArgs specs of `sluice serve`. */
const SERVE_FLAGS = {
  config: { type: 'string', multiple: true },
  redis: { type: 'string' },
  'redis-cluster': { type: 'string' },
  'redis-prefix': { type: 'string' },
  'redis-timeout': { type: 'string' },
  store: { type: 'string' },
  upstream: { type: 'string' },
  adaptive: { type: 'string' },
  host: { type: 'string' },
  port: { type: 'string' },
  'grpc-port': { type: 'string' },
  'proxy-port': { type: 'string' },
  fail: { type: 'string' },
  'insurance-share': { type: 'string' },
  'memory-max-keys': { type: 'string' },
  'memory-max-bytes': { type: 'string' },
  shadow: { type: 'boolean' },
  'max-descriptor-series': { type: 'string' },
  'client-clock': { type: 'boolean' },
  'reservation-ttl': { type: 'string' },
  'max-reservations': { type: 'string' },
  'trust-proxy': { type: 'string' },
  'no-watch': { type: 'boolean' },
  'max-body': { type: 'string' },
  'shutdown-grace': { type: 'string' },
  ...LIMIT_FLAGS,
  'log-level': { type: 'string' },
  'ports-file': { type: 'string' },
  ...MULTI_REGION_FLAGS,
  'envoy-compat': { type: 'boolean' },
  ...CAPTURE_FLAGS,
} as const;

type Values = ReturnType<typeof parseArgs<{ options: typeof SERVE_FLAGS }>>['values'];

const FAIL_MODES: readonly FailMode[] = ['open', 'closed', 'insurance'];

/** Bad usage (exit 2); `code` is the SluiceError code a program can match on in `--json`-less stderr. */
export class UsageError extends Error {
  constructor(
    message: string,
    readonly code = 'ERR_SLUICE_USAGE',
  ) {
    super(message);
  }
}

/** Turns flags and environment into service options; flags win over the environment. */
export function serveOptions(
  argv: readonly string[],
  processEnv: NodeJS.ProcessEnv,
): { options: ServiceOptions; warnings: string[]; portsFile?: string } {
  const { values } = parseArgs({ args: [...argv], strict: true, allowPositionals: false, options: SERVE_FLAGS });
  const envoy = values['envoy-compat'] === true || isEnvoyStart(processEnv);
  const base = envoy ? envoyServiceOptions(processEnv) : undefined;
  const options: ServiceOptions = base?.options ?? {};
  // In envoy mode the environment speaks envoy's language (REDIS_URL is host:port, LOG_LEVEL is WARN...):
  // sluice's own readings of those names are skipped, and only flags override.
  const env: NodeJS.ProcessEnv = envoy ? { SLUICE_ADMIN_TOKEN: processEnv.SLUICE_ADMIN_TOKEN } : processEnv;
  const config = values.config ?? (env.SLUICE_CONFIG ? env.SLUICE_CONFIG.split(',').filter(Boolean) : undefined);
  if (config !== undefined && config.length > 0) options.config = config;
  applyStoreFlags(values, env, options);
  applyListenFlags(values, env, options);
  applyDecisionFlags(values, options);
  applyServiceFlags(values, env, options);
  applyLimitFlags(values, options);
  applyCaptureFlags(values, env, options, byteSize);
  // OpenTelemetry's own variables, in either mode: OTEL_METRICS_EXPORTER=otlp pushes decisions over OTLP.
  const otelMetrics = otelMetricsFromEnv(processEnv);
  if (otelMetrics !== undefined) options.observability = { ...options.observability, otelMetrics };
  const warnings = base?.warnings ?? [];
  const stray = envoy ? undefined : strayEnvoySettingsWarning(processEnv);
  if (stray !== undefined) warnings.push(stray);
  const portsFile = values['ports-file'];
  return portsFile === undefined ? { options, warnings } : { options, warnings, portsFile };
}

/** The store's options as built so far (envoy's environment may have given some), created when missing. */
function storeOf(options: ServiceOptions): StoreOptions {
  const store = (options.store ?? {}) as StoreOptions;
  options.store = store;
  return store;
}

/** `--redis`, `--redis-cluster`, `--redis-prefix`, `--redis-timeout`, the region flags, `--store`, `--memory-*`. */
function applyStoreFlags(values: Values, env: NodeJS.ProcessEnv, options: ServiceOptions): void {
  const store = storeOf(options);
  const redisUrl = values.redis ?? env.REDIS_URL;
  const cluster = values['redis-cluster'];
  if (values.redis !== undefined && cluster !== undefined)
    throw new UsageError('give --redis or --redis-cluster, not both');
  if (cluster !== undefined) {
    const nodes = cluster
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean);
    if (nodes.length === 0) throw new UsageError('--redis-cluster: expected host:port,host:port,...');
    store.redis = { cluster: nodes };
  } else if (redisUrl !== undefined && redisUrl !== '') {
    store.redis = { url: redisUrl };
  }
  const prefix = values['redis-prefix'];
  const timeoutMs =
    values['redis-timeout'] === undefined ? undefined : parseDuration(values['redis-timeout'], '--redis-timeout');
  // Several regions: this region's Redis (--redis) becomes one of the multi-region store's.
  const multiRegion = multiRegionOptions(values, env, redisUrl);
  if (multiRegion !== undefined) {
    if (cluster !== undefined) throw new UsageError("--region: give this region's Redis with --redis URL");
    delete store.redis;
    store.multiRegion = multiRegion;
  }
  const redis = store.multiRegion ?? store.redis;
  if (redis !== undefined && prefix !== undefined) redis.prefix = prefix;
  if (redis !== undefined && timeoutMs !== undefined) redis.timeoutMs = timeoutMs;
  applySqlStoreFlag(values, env, store);
  applyMemoryFlags(values, store);
  if (Object.keys(store).length === 0) delete options.store;
}

/** `--store postgres://…|mysql://…|sqlite:PATH` (or SLUICE_STORE): a SQL store instead of Redis. */
function applySqlStoreFlag(values: Values, env: NodeJS.ProcessEnv, store: StoreOptions): void {
  const url = values.store ?? env.SLUICE_STORE;
  if (url === undefined || url === '') return;
  if (url.length > 4096) throw new UsageError('--store: a URL of at most 4096 characters');
  if (values.redis !== undefined || values['redis-cluster'] !== undefined || store.multiRegion !== undefined)
    throw new UsageError('give --store or --redis / --redis-cluster / --region, not both');
  sqlKind(url);
  // A REDIS_URL left in the environment does not compete with an explicit SQL store.
  delete store.redis;
  store.sql = { url };
}

function applyMemoryFlags(values: Values, store: StoreOptions): void {
  for (const flag of ['memory-max-keys', 'memory-max-bytes'] as const) {
    if (values[flag] !== undefined && (store.redis !== undefined || store.multiRegion !== undefined)) {
      throw new UsageError(
        `--${flag}: sizes the memory store; with --redis there is none`,
        'ERR_SLUICE_INVALID_OPTION',
      );
    }
  }
  if (values['memory-max-keys'] !== undefined) {
    store.memory = { maxKeys: wholeNumber(values['memory-max-keys'], '--memory-max-keys', 1, 2 ** 30) };
  }
  if (values['memory-max-bytes'] !== undefined) {
    store.memory = { ...store.memory, maxBytes: byteSize(values['memory-max-bytes'], '--memory-max-bytes') };
  }
}

/** `--host`, the ports, `--upstream` and `--trust-proxy`. */
function applyListenFlags(values: Values, env: NodeJS.ProcessEnv, options: ServiceOptions): void {
  const host = values.host ?? env.HOST;
  if (host) options.host = host;
  const httpPort = port(values.port ?? env.PORT, '--port');
  if (httpPort !== undefined) options.http = { ...options.http, port: httpPort };
  const grpcPort = port(values['grpc-port'] ?? env.GRPC_PORT, '--grpc-port');
  if (grpcPort !== undefined) options.grpc = { ...options.grpc, port: grpcPort };
  const proxyPort = port(values['proxy-port'] ?? env.PROXY_PORT, '--proxy-port');
  const trustProxy = values['trust-proxy']?.split(',').map((s) => s.trim());
  if (values.upstream !== undefined) {
    options.gateway = {
      upstream: values.upstream,
      ...(proxyPort === undefined ? {} : { port: proxyPort }),
      ...(trustProxy === undefined ? {} : { trustProxy }),
    };
    if (values.adaptive !== undefined) options.gateway.adaptive = { algorithm: adaptiveAlgorithm(values.adaptive) };
  } else if (values['trust-proxy'] !== undefined || values.adaptive !== undefined) {
    const flag = values.adaptive === undefined ? '--trust-proxy' : '--adaptive';
    throw new UsageError(`${flag}: applies to the gateway; give --upstream too`, 'ERR_SLUICE_INVALID_OPTION');
  }
}

const ADAPTIVE_ALGORITHMS = ['gradient2', 'vegas', 'aimd'] as const;

/** `--adaptive ALG`: the algorithm of the gateway's adaptive limit. */
function adaptiveAlgorithm(text: string): (typeof ADAPTIVE_ALGORITHMS)[number] {
  const found = ADAPTIVE_ALGORITHMS.find((a) => a === text);
  if (found === undefined)
    throw new UsageError(`--adaptive: use ${ADAPTIVE_ALGORITHMS.join(', ')}`, 'ERR_SLUICE_INVALID_OPTION');
  return found;
}

/** `--fail`, `--insurance-share`, `--shadow`. */
function applyDecisionFlags(values: Values, options: ServiceOptions): void {
  if (values.fail !== undefined) {
    if (!FAIL_MODES.includes(values.fail as FailMode)) throw new UsageError(`--fail: use ${FAIL_MODES.join(', ')}`);
    options.fail = values.fail as FailMode;
  }
  const shareText = values['insurance-share'];
  if (shareText !== undefined) {
    const share = Number(shareText);
    if (options.fail !== 'insurance') {
      throw new UsageError('--insurance-share: only applies with --fail insurance', 'ERR_SLUICE_INVALID_OPTION');
    }
    if (shareText.trim() === '' || !Number.isFinite(share) || share <= 0 || share > 1) {
      throw new UsageError(
        `--insurance-share: '${shareText}' is not a number above 0 and at most 1 (e.g. 0.25)`,
        'ERR_SLUICE_INVALID_OPTION',
      );
    }
    options.insuranceShare = share;
  }
  if (values.shadow) options.shadow = true;
}

/** `--client-clock`, `--no-watch`, `--max-body`, `--shutdown-grace`, `--log-level`, `--max-descriptor-series`, the admin token. */
function applyServiceFlags(values: Values, env: NodeJS.ProcessEnv, options: ServiceOptions): void {
  if (values['client-clock']) options.http = { ...options.http, clientClock: true };
  if (values['no-watch']) options.watch = false;
  if (values['reservation-ttl'] !== undefined) {
    const ttl = parseDuration(values['reservation-ttl'], '--reservation-ttl');
    if (ttl < 1000) throw new UsageError('--reservation-ttl: expected at least 1s', 'ERR_SLUICE_INVALID_OPTION');
    options.http = { ...options.http, reservationTtlMs: ttl };
  }
  if (values['max-reservations'] !== undefined) {
    const max = wholeNumber(values['max-reservations'], '--max-reservations', 1, 10_000_000);
    options.http = { ...options.http, maxReservations: max };
  }
  if (values['max-body'] !== undefined) {
    const n = Number(values['max-body']);
    if (!Number.isInteger(n) || n < 1) throw new UsageError('--max-body: expected a whole number of bytes');
    options.http = { ...options.http, maxBodyBytes: n };
  }
  if (values['shutdown-grace'] !== undefined) {
    options.shutdownGraceMs = parseDuration(values['shutdown-grace'], '--shutdown-grace');
  }
  const observability = { ...options.observability };
  if (values['max-descriptor-series'] !== undefined) {
    observability.maxDescriptorSeries = wholeNumber(
      values['max-descriptor-series'],
      '--max-descriptor-series',
      1,
      1_000_000,
    );
  }
  const level = values['log-level'] ?? env.LOG_LEVEL;
  if (level !== undefined && level !== '') {
    if (!(LOG_LEVELS as readonly string[]).includes(level)) {
      throw new UsageError(`--log-level: use ${LOG_LEVELS.join(', ')}`);
    }
    observability.logLevel = level as LogLevel;
  }
  if (Object.keys(observability).length > 0) options.observability = observability;
  const token = env.SLUICE_ADMIN_TOKEN;
  if (token !== undefined && token !== '') options.adminToken = token;
}

function port(value: string | undefined, name: string): number | undefined {
  if (value === undefined || value === '') return undefined;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0 || n > 65535) throw new UsageError(`${name}: '${value}' is not a port (0-65535)`);
  return n;
}

/** A flag's whole number between `min` and `max` (digits only: '1e3', '0x10' and '' are refused). */
function wholeNumber(text: string, flag: string, min: number, max: number): number {
  const n = /^\d+$/.test(text.trim()) ? Number(text) : Number.NaN;
  if (!Number.isSafeInteger(n) || n < min || n > max) {
    throw new UsageError(`${flag}: '${text}' is not a whole number from ${min} to ${max}`, 'ERR_SLUICE_INVALID_OPTION');
  }
  return n;
}

const BYTE_UNITS: Record<string, number> = { '': 1, b: 1, kb: 1024, mb: 1024 ** 2, gb: 1024 ** 3 };

/** `268435456`, `256mb`, `1gb` (binary units) → bytes, at least 1 MiB and at most 64 GiB. */
function byteSize(text: string, flag: string): number {
  const match = /^(\d{1,12})\s*(b|kb|mb|gb)?$/i.exec(text.trim());
  const bytes = match ? Number(match[1]) * (BYTE_UNITS[(match[2] ?? '').toLowerCase()] ?? Number.NaN) : Number.NaN;
  if (!(bytes >= 1024 ** 2 && bytes <= 64 * 1024 ** 3)) {
    throw new UsageError(
      `${flag}: '${text.slice(0, 40)}' is not a size from 1mb to 64gb (a number of bytes, or with kb, mb or gb)`,
      'ERR_SLUICE_INVALID_OPTION',
    );
  }
  return bytes;
}
