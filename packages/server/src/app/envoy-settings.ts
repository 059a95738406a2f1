/**
 * Reads envoyproxy/ratelimit's environment variables into service options, so its deployment manifests
 * (Helm charts, Envoy Gateway) start sluice unchanged. Used when sluice is started the envoy way:
 * `sluice serve --envoy-compat`, or with `RUNTIME_ROOT` or `CONFIG_TYPE` in the environment (names only
 * envoy ratelimit uses). Values are parsed as envoy's Go code parses them (booleans as strconv.ParseBool,
 * durations as time.ParseDuration); a bad value stops the start with the variable's name.
 */
import { join } from 'node:path';
import type { RedisOptions } from '../backends/redis-backend.js';
import type { LogLevel } from '../observability/logger.js';
import { otlpFromEnv } from '../observability/tracing/otlp-env.js';
import {
  bad,
  type Env,
  goBool,
  goDuration,
  goFloat,
  goInt,
  goMap,
  listenAddress,
  port,
} from './envoy-settings-parse.js';
import { envoyStatsFromEnv } from './envoy-settings-stats.js';
import { ENVOY_SETTINGS } from './envoy-settings-table.js';
import type { GrpcServiceOptions, ObservabilityOptions, ServiceOptions, StoreOptions } from './service-options.js';

/** True when the environment says sluice was started as envoy ratelimit is. */
export function isEnvoyStart(env: Env): boolean {
  return env.RUNTIME_ROOT !== undefined || env.CONFIG_TYPE !== undefined;
}

export { goBool, goDuration, goMap } from './envoy-settings-parse.js';

/** Service options from envoy ratelimit's settings, and what the operator should know about them. */
export interface EnvoyStart {
  options: ServiceOptions;
  /** One line per setting that is set but not (yet) acted on, saying what sluice does instead. */
  warnings: string[];
}

/** `"k1=v1,k2=v2"`, as envoy ratelimit reads CONFIG_GRPC_XDS_NODE_METADATA (pairs without `=` are skipped). */
function nodeMetadata(text: string | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const pair of (text ?? '').split(',')) {
    const at = pair.indexOf('=');
    if (at > 0) out[pair.slice(0, at)] = pair.slice(at + 1);
  }
  return out;
}

const LEVELS: Record<string, LogLevel> = {
  trace: 'trace',
  debug: 'debug',
  info: 'info',
  warn: 'warn',
  warning: 'warn',
  error: 'error',
  fatal: 'fatal',
  panic: 'fatal',
};

/** GRPC_MAX_CONNECTION_AGE(_GRACE), where 0 means "no limit" as in grpc-go's keepalive parameters. */
function connectionAge(env: Env): Pick<GrpcServiceOptions, 'maxConnectionAgeMs' | 'maxConnectionAgeGraceMs'> {
  const age = goDuration(env, 'GRPC_MAX_CONNECTION_AGE', 24 * 3_600_000);
  const grace = goDuration(env, 'GRPC_MAX_CONNECTION_AGE_GRACE', 3_600_000);
  return {
    ...(age === 0 ? {} : { maxConnectionAgeMs: age }),
    ...(grace === 0 ? {} : { maxConnectionAgeGraceMs: grace }),
  };
}

/** `user:password` or `password` (envoy's REDIS_AUTH and friends). */
function credentials(auth: string | undefined): { username?: string; password?: string } {
  if (auth === undefined || auth === '') return {};
  const colon = auth.indexOf(':');
  return colon < 0 ? { password: auth } : { username: auth.slice(0, colon), password: auth.slice(colon + 1) };
}

/**
 * One Redis as envoy's settings of `prefix` (`REDIS` or `REDIS_PERSECOND`) describe it: REDIS_TYPE
 * single, cluster or sentinel; REDIS_URL; REDIS_SOCKET_TYPE; REDIS_AUTH; REDIS_TLS; REDIS_TIMEOUT;
 * REDIS_SENTINEL_AUTH. The TLS files (REDIS_TLS_CLIENT_CERT, ...) are shared by both, as upstream.
 */
function redisTarget(env: Env, prefix: 'REDIS' | 'REDIS_PERSECOND', url: string, warnings: string[]): RedisOptions {
  const v = (name: string) => `${prefix}_${name}`;
  const type = (env[v('TYPE')] || 'single').toLowerCase();
  const options: RedisOptions = credentials(env[v('AUTH')]);
  if (goBool(env, v('TLS'), false)) options.tls = redisTls(env);
  if (env.CACHE_KEY_PREFIX) options.prefix = env.CACHE_KEY_PREFIX;
  if (env[v('TIMEOUT')]) options.timeoutMs = goDuration(env, v('TIMEOUT'), 50);
  const localCache = goInt(env, 'LOCAL_CACHE_SIZE_IN_BYTES', 0);
  // envoy's local cache is a freecache of this many bytes (512 KiB at least); an entry takes about 128.
  options.localCache = localCache === 0 ? false : { maxKeys: Math.floor(Math.max(localCache, 512 * 1024) / 128) };
  if (type === 'cluster') return { ...options, cluster: url.split(',').map((s) => s.trim()) };
  if (type === 'sentinel') {
    const [name, ...sentinels] = url.split(',').map((s) => s.trim());
    if (
      name === undefined ||
      name === '' ||
      sentinels.length === 0 ||
      sentinels.some((s) => !/^[^/]+:\d{1,5}$/.test(s))
    ) {
      throw bad(v('URL'), `'${url}' is not <master name>,<sentinel host:port>,... (REDIS_TYPE=sentinel)`);
    }
    const sentinel = { name, sentinels, ...credentials(env[v('SENTINEL_AUTH')]) };
    return { ...options, sentinel };
  }
  if (type !== 'single') throw bad(v('TYPE'), `'${env[v('TYPE')]}' is not single, sentinel or cluster`);
  const socket = (env[v('SOCKET_TYPE')] || '').toLowerCase();
  const looksTcp = /^[^/]+:\d{1,5}$/.test(url);
  if (socket === 'unix' || (socket === '' && !looksTcp)) return { ...options, path: url };
  if (socket === '') {
    warnings.push(
      `${v('SOCKET_TYPE')} is not set (envoy's default is unix) but ${v('URL')} '${url}' is host:port: using tcp`,
    );
  } else if (socket !== 'tcp') throw bad(v('SOCKET_TYPE'), `'${env[v('SOCKET_TYPE')]}' is not tcp or unix`);
  return { ...options, url: `${options.tls === undefined ? 'redis' : 'rediss'}://${url}` };
}

/** REDIS_TLS_*: files and the name check, or plain TLS with the system CAs when none is set. */
function redisTls(env: Env): NonNullable<RedisOptions['tls']> {
  const cert = env.REDIS_TLS_CLIENT_CERT || undefined;
  const key = env.REDIS_TLS_CLIENT_KEY || undefined;
  // envoy silently skips a certificate without its key; a start that names the missing one is kinder.
  if ((cert === undefined) !== (key === undefined)) {
    throw bad(
      cert === undefined ? 'REDIS_TLS_CLIENT_CERT' : 'REDIS_TLS_CLIENT_KEY',
      'a client certificate needs both REDIS_TLS_CLIENT_CERT and REDIS_TLS_CLIENT_KEY',
    );
  }
  const tls = {
    ...(env.REDIS_TLS_CACERT ? { caFile: env.REDIS_TLS_CACERT } : {}),
    ...(cert === undefined || key === undefined ? {} : { certFile: cert, keyFile: key }),
    ...(goBool(env, 'REDIS_TLS_SKIP_HOSTNAME_VERIFICATION', false) ? { skipHostnameVerification: true } : {}),
  };
  return Object.keys(tls).length === 0 ? true : tls;
}

/**
 * The store envoy's Redis settings describe, with the per-second Redis when REDIS_PERSECOND is on. No
 * REDIS_URL means sluice's embedded memory store (envoy's own default points at a twemproxy socket that
 * rarely exists).
 */
function redisOptions(env: Env, warnings: string[]): StoreOptions {
  const backend = (env.BACKEND_TYPE || 'redis').toLowerCase();
  if (backend === 'memcache') throw bad('BACKEND_TYPE', 'memcache is not supported by sluice; use redis');
  if (backend !== 'redis') throw bad('BACKEND_TYPE', `'${env.BACKEND_TYPE}' is not redis`);
  const perSecond = goBool(env, 'REDIS_PERSECOND', false);
  const url = env.REDIS_URL;
  if (url === undefined || url === '') {
    warnings.push(
      `REDIS_URL is not set: counters live in the embedded memory store (one process only)${perSecond ? '; REDIS_PERSECOND is ignored' : ''}`,
    );
    return {};
  }
  const redis = redisTarget(env, 'REDIS', url, warnings);
  if (!perSecond) {
    if (env.REDIS_PERSECOND_URL) {
      warnings.push('REDIS_PERSECOND_URL is set but REDIS_PERSECOND is not true: every limit uses REDIS_URL');
    }
    return { redis };
  }
  const secondUrl = env.REDIS_PERSECOND_URL;
  if (secondUrl === undefined || secondUrl === '') {
    throw bad('REDIS_PERSECOND_URL', 'REDIS_PERSECOND=true needs the per-second Redis (host:port, a socket or a list)');
  }
  return { redis, redisPerSecond: redisTarget(env, 'REDIS_PERSECOND', secondUrl, warnings) };
}

/**
 * Service options from envoy ratelimit's environment variables, with its defaults.
 * @throws SluiceError `ERR_SLUICE_INVALID_OPTION` naming the variable, for a value envoy would refuse too.
 */
export function envoyServiceOptions(env: Env): EnvoyStart {
  const warnings: string[] = [];
  const options: ServiceOptions = {
    host: env.HOST || '0.0.0.0',
    http: { port: port(env, 'PORT', 8080) },
    grpc: grpcOptions(env, warnings),
    shadow: goBool(env, 'SHADOW_MODE', false),
    quota: goBool(env, 'QUOTA_MODE', false),
    mergeDomains: goBool(env, 'MERGE_DOMAIN_CONFIG', false),
    dynamicMetadata: goBool(env, 'RESPONSE_DYNAMIC_METADATA', false),
    healthNeedsConfig: goBool(env, 'HEALTHY_WITH_AT_LEAST_ONE_CONFIG_LOADED', false),
    headers: goBool(env, 'LIMIT_RESPONSE_HEADERS_ENABLED', false)
      ? {
          limit: env.LIMIT_LIMIT_HEADER || 'RateLimit-Limit',
          remaining: env.LIMIT_REMAINING_HEADER || 'RateLimit-Remaining',
          reset: env.LIMIT_RESET_HEADER || 'RateLimit-Reset',
        }
      : 'none',
    observability: observabilityOptions(env, warnings),
    ...configOptions(env),
    store: redisOptions(env, warnings),
  };
  if (
    env.STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT !== undefined &&
    !goBool(env, 'STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT', false)
  ) {
    warnings.push('STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT=false: sluice never counts a rejected request');
  }
  for (const setting of ENVOY_SETTINGS) {
    if (setting.status === 'not yet' && env[setting.name] !== undefined && env[setting.name] !== '') {
      warnings.push(`${setting.name} is set but not supported yet: ${setting.note}`);
    }
  }
  return { options, warnings };
}

/** GRPC_HOST, GRPC_PORT, GRPC_UDS, the connection age, and the server's TLS (GRPC_SERVER_USE_TLS and its files). */
function grpcOptions(env: Env, warnings: string[]): GrpcServiceOptions {
  const grpc: GrpcServiceOptions = {
    host: env.GRPC_HOST || '0.0.0.0',
    port: port(env, 'GRPC_PORT', 8081),
    ...connectionAge(env),
    ...(env.GRPC_UDS ? { socket: env.GRPC_UDS } : {}),
  };
  if (goBool(env, 'GRPC_SERVER_USE_TLS', false)) {
    const certFile = env.GRPC_SERVER_TLS_CERT;
    const keyFile = env.GRPC_SERVER_TLS_KEY;
    if (!certFile || !keyFile) {
      throw bad('GRPC_SERVER_USE_TLS', 'TLS needs GRPC_SERVER_TLS_CERT and GRPC_SERVER_TLS_KEY (files in PEM)');
    }
    grpc.tls = {
      certFile,
      keyFile,
      ...(env.GRPC_CLIENT_TLS_CACERT ? { clientCaFile: env.GRPC_CLIENT_TLS_CACERT } : {}),
      ...(env.GRPC_CLIENT_TLS_SAN ? { clientSan: env.GRPC_CLIENT_TLS_SAN } : {}),
    };
  } else if (env.GRPC_SERVER_TLS_CERT || env.GRPC_CLIENT_TLS_CACERT) {
    warnings.push(
      'GRPC_SERVER_TLS_CERT/GRPC_CLIENT_TLS_CACERT are set but GRPC_SERVER_USE_TLS is not true: gRPC is plaintext',
    );
  }
  return grpc;
}

/** Stats (NEAR_LIMIT_RATIO, EXTRA_TAGS, DISABLE_STATS, USE_PROMETHEUS, USE_STATSD, STATSD_*), tracing and the log level. */
function observabilityOptions(env: Env, warnings: string[]): ObservabilityOptions {
  const observability: ObservabilityOptions = { nearLimitRatio: goFloat(env, 'NEAR_LIMIT_RATIO', 0.8) };
  const extraTags = goMap(env, 'EXTRA_TAGS');
  if (Object.keys(extraTags).length > 0) observability.metricsLabels = extraTags;
  if (goBool(env, 'DISABLE_STATS', false)) observability.disableStats = true;
  if (goBool(env, 'TRACING_ENABLED', false)) observability.tracing = tracingOptions(env);
  const level = env.LOG_LEVEL;
  if (level) {
    const mapped = LEVELS[level.toLowerCase()];
    if (mapped === undefined) {
      throw bad('LOG_LEVEL', `'${level}' is not a log level (${Object.keys(LEVELS).join(', ')})`);
    }
    observability.logLevel = mapped;
  } else observability.logLevel = 'warn';
  if (env.LOG_FORMAT && env.LOG_FORMAT.toLowerCase() !== 'json') {
    warnings.push(`LOG_FORMAT=${env.LOG_FORMAT}: sluice always logs JSON lines`);
  }
  if (goBool(env, 'USE_PROMETHEUS', false)) {
    const at = listenAddress(env, 'PROMETHEUS_ADDR', ':9090');
    observability.metricsListener = { ...at, path: env.PROMETHEUS_PATH || '/metrics' };
  }
  const envoyStats = envoyStatsFromEnv(env, extraTags, warnings);
  if (envoyStats !== undefined) observability.envoyStats = envoyStats;
  return observability;
}

/** TRACING_*: OTLP over HTTP or gRPC, the service's resource attributes, the sampling rate, the batch settings. */
function tracingOptions(env: Env): NonNullable<ObservabilityOptions['tracing']> {
  const protocol = (env.TRACING_EXPORTER_PROTOCOL || 'http').toLowerCase();
  if (protocol !== 'http' && protocol !== 'grpc') {
    throw bad('TRACING_EXPORTER_PROTOCOL', `'${env.TRACING_EXPORTER_PROTOCOL}' is not http or grpc`);
  }
  return {
    otlp: otlpFromEnv(env, protocol),
    serviceName: env.TRACING_SERVICE_NAME || 'RateLimit',
    samplingRate: goFloat(env, 'TRACING_SAMPLING_RATE', 1),
    ...(env.TRACING_SERVICE_NAMESPACE ? { serviceNamespace: env.TRACING_SERVICE_NAMESPACE } : {}),
    ...(env.TRACING_SERVICE_INSTANCE_ID ? { serviceInstanceId: env.TRACING_SERVICE_INSTANCE_ID } : {}),
    // OpenTelemetry's batch span processor variables, as envoy ratelimit's SDK reads them.
    ...(env.OTEL_BSP_SCHEDULE_DELAY ? { scheduleMs: goInt(env, 'OTEL_BSP_SCHEDULE_DELAY', 5000) } : {}),
    ...(env.OTEL_BSP_MAX_QUEUE_SIZE ? { maxQueue: goInt(env, 'OTEL_BSP_MAX_QUEUE_SIZE', 2048) } : {}),
    ...(env.OTEL_BSP_MAX_EXPORT_BATCH_SIZE ? { maxBatch: goInt(env, 'OTEL_BSP_MAX_EXPORT_BATCH_SIZE', 512) } : {}),
  };
}

/** CONFIG_TYPE: files under RUNTIME_ROOT (FILE), or an xDS management server (GRPC_XDS_SOTW). */
function configOptions(env: Env): Pick<ServiceOptions, 'config' | 'configRoot' | 'startWithoutConfig' | 'xds'> {
  const configType = (env.CONFIG_TYPE || 'FILE').toUpperCase();
  if (configType === 'FILE') {
    const root = env.RUNTIME_ROOT || '/srv/runtime_data/current';
    return {
      config: [join(root, env.RUNTIME_SUBDIRECTORY ?? '', env.RUNTIME_APPDIRECTORY || 'config')],
      configRoot: root,
      startWithoutConfig: true,
    };
  }
  if (configType !== 'GRPC_XDS_SOTW') throw bad('CONFIG_TYPE', `'${env.CONFIG_TYPE}' is not FILE or GRPC_XDS_SOTW`);
  const tls = goBool(env, 'CONFIG_GRPC_XDS_SERVER_USE_TLS', false);
  return {
    xds: {
      server: env.CONFIG_GRPC_XDS_SERVER_URL || 'localhost:18000',
      nodeId: env.CONFIG_GRPC_XDS_NODE_ID || 'default',
      nodeMetadata: nodeMetadata(env.CONFIG_GRPC_XDS_NODE_METADATA),
      headers: goMap(env, 'CONFIG_GRPC_XDS_CLIENT_ADDITIONAL_HEADERS'),
      // envoy ratelimit's reconnect waits come from the XDS_CLIENT_BACKOFF_* settings (its
      // CONNECT_RETRY_INTERVAL feeds a stream-retry interceptor whose retries are off by default).
      backoff: {
        initialMs: goDuration(env, 'XDS_CLIENT_BACKOFF_INITIAL_INTERVAL', 10_000),
        maxMs: goDuration(env, 'XDS_CLIENT_BACKOFF_MAX_INTERVAL', 60_000),
        factor: goFloat(env, 'XDS_CLIENT_BACKOFF_RANDOM_FACTOR', 0.5),
        jitter: goBool(env, 'XDS_CLIENT_BACKOFF_JITTER', true),
      },
      forceStart: goBool(env, 'FORCE_START_WITHOUT_INITIAL_CONFIG', false),
      maxMessageBytes: goInt(env, 'XDS_CLIENT_MAX_MSG_SIZE_IN_BYTES', 4 * 1024 * 1024),
      ...(tls
        ? {
            tls: {
              ...(env.CONFIG_GRPC_XDS_SERVER_TLS_CACERT ? { caFile: env.CONFIG_GRPC_XDS_SERVER_TLS_CACERT } : {}),
              ...(env.CONFIG_GRPC_XDS_CLIENT_TLS_CERT ? { certFile: env.CONFIG_GRPC_XDS_CLIENT_TLS_CERT } : {}),
              ...(env.CONFIG_GRPC_XDS_CLIENT_TLS_KEY ? { keyFile: env.CONFIG_GRPC_XDS_CLIENT_TLS_KEY } : {}),
              ...(env.CONFIG_GRPC_XDS_SERVER_TLS_SAN ? { serverName: env.CONFIG_GRPC_XDS_SERVER_TLS_SAN } : {}),
            },
          }
        : {}),
    },
  };
}
