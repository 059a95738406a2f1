/**
 * Reads envoyproxy/ratelimit's environment variables into service options, so its deployment manifests
 * (Helm charts, Envoy Gateway) start sluice unchanged. Used when sluice is started the envoy way:
 * `sluice serve --envoy-compat`, or with `RUNTIME_ROOT` or `CONFIG_TYPE` in the environment (names only
 * envoy ratelimit uses). Values are parsed as envoy's Go code parses them (booleans as strconv.ParseBool,
 * durations as time.ParseDuration); a bad value stops the start with the variable's name.
 */
import { join } from 'node:path';
import { SluiceError } from 'sluice';
import type { LogLevel } from '../logger.js';
import type { RedisOptions } from '../redis-backend.js';
import type { ServiceOptions } from '../service.js';
import { ENVOY_SETTINGS } from './settings-table.js';

type Env = Readonly<Record<string, string | undefined>>;

/** True when the environment says sluice was started as envoy ratelimit is. */
export function isEnvoyStart(env: Env): boolean {
  return env.RUNTIME_ROOT !== undefined || env.CONFIG_TYPE !== undefined;
}

/** Service options from envoy ratelimit's settings, and what the operator should know about them. */
export interface EnvoyStart {
  options: ServiceOptions;
  /** One line per setting that is set but not (yet) acted on, saying what sluice does instead. */
  warnings: string[];
}

function bad(name: string, why: string): SluiceError {
  return new SluiceError('ERR_SLUICE_INVALID_OPTION', `${name}: ${why}`, { option: name });
}

/** Go's strconv.ParseBool. */
export function goBool(env: Env, name: string, fallback: boolean): boolean {
  const v = env[name];
  if (v === undefined || v === '') return fallback;
  if (['1', 't', 'T', 'TRUE', 'true', 'True'].includes(v)) return true;
  if (['0', 'f', 'F', 'FALSE', 'false', 'False'].includes(v)) return false;
  throw bad(name, `'${v}' is not a boolean (use true or false)`);
}

function goInt(env: Env, name: string, fallback: number, max = 2 ** 31 - 1): number {
  const v = env[name];
  if (v === undefined || v === '') return fallback;
  if (!/^\d{1,10}$/.test(v) || Number(v) > max) throw bad(name, `'${v}' is not a whole number from 0 to ${max}`);
  return Number(v);
}

const GO_UNITS: Record<string, number> = { ns: 1e-6, us: 1e-3, µs: 1e-3, ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/** Go's time.ParseDuration (`"1h30m"`, `"150us"`, `"0"`), in whole milliseconds (rounded up). */
export function goDuration(env: Env, name: string, fallbackMs: number): number {
  const v = env[name];
  if (v === undefined || v === '') return fallbackMs;
  if (v === '0') return 0;
  const part = /(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)/gy;
  let ms = 0;
  let at = 0;
  for (let m = part.exec(v); m !== null; m = part.exec(v)) {
    ms += Number(m[1]) * (GO_UNITS[m[2] as string] as number);
    at = part.lastIndex;
  }
  if (at !== v.length || at === 0 || !Number.isFinite(ms)) {
    throw bad(name, `'${v}' is not a duration (e.g. 10s, 1m30s, 24h)`);
  }
  return Math.ceil(ms);
}

/** `"k1:v1,k2:v2"` (envconfig's map form). */
export function goMap(env: Env, name: string): Record<string, string> {
  const v = env[name];
  const out: Record<string, string> = {};
  if (v === undefined || v === '') return out;
  for (const pair of v.split(',')) {
    const at = pair.indexOf(':');
    if (at <= 0) throw bad(name, `'${pair}' is not key:value`);
    out[pair.slice(0, at).trim()] = pair.slice(at + 1).trim();
  }
  return out;
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

function port(env: Env, name: string, fallback: number): number {
  return goInt(env, name, fallback, 65535);
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

/** `host:port` or `:port` (Go's listen address form). */
function listenAddress(env: Env, name: string, fallback: string): { host: string; port: number } {
  const v = env[name] || fallback;
  const m = /^(.*):(\d{1,5})$/.exec(v);
  if (m === null || Number(m[2]) > 65535) throw bad(name, `'${v}' is not [host]:port`);
  const host = (m[1] as string).replace(/^\[|\]$/g, '');
  return { host: host === '' ? '0.0.0.0' : host, port: Number(m[2]) };
}

/** GRPC_MAX_CONNECTION_AGE(_GRACE), where 0 means "no limit" as in grpc-go's keepalive parameters. */
function connectionAge(env: Env): Pick<ServiceOptions, 'grpcMaxConnectionAgeMs' | 'grpcMaxConnectionAgeGraceMs'> {
  const age = goDuration(env, 'GRPC_MAX_CONNECTION_AGE', 24 * 3_600_000);
  const grace = goDuration(env, 'GRPC_MAX_CONNECTION_AGE_GRACE', 3_600_000);
  return {
    ...(age === 0 ? {} : { grpcMaxConnectionAgeMs: age }),
    ...(grace === 0 ? {} : { grpcMaxConnectionAgeGraceMs: grace }),
  };
}

/**
 * The store envoy's Redis settings describe. No REDIS_URL means sluice's embedded memory store (envoy's
 * own default points at a twemproxy socket that rarely exists).
 */
function redisOptions(env: Env, warnings: string[]): RedisOptions | undefined {
  const backend = (env.BACKEND_TYPE || 'redis').toLowerCase();
  if (backend === 'memcache') throw bad('BACKEND_TYPE', 'memcache is not supported by sluice; use redis');
  if (backend !== 'redis') throw bad('BACKEND_TYPE', `'${env.BACKEND_TYPE}' is not redis`);
  const url = env.REDIS_URL;
  if (url === undefined || url === '') {
    warnings.push('REDIS_URL is not set: counters live in the embedded memory store (one process only)');
    return undefined;
  }
  const type = (env.REDIS_TYPE || 'single').toLowerCase();
  const tls = goBool(env, 'REDIS_TLS', false);
  const auth = env.REDIS_AUTH ?? '';
  const colon = auth.indexOf(':');
  const credentials =
    auth === ''
      ? {}
      : colon < 0
        ? { password: auth }
        : { username: auth.slice(0, colon), password: auth.slice(colon + 1) };
  const common: RedisOptions = { ...credentials, ...(tls ? { tls: true } : {}) };
  if (env.CACHE_KEY_PREFIX) common.prefix = env.CACHE_KEY_PREFIX;
  if (env.REDIS_TIMEOUT) common.timeoutMs = goDuration(env, 'REDIS_TIMEOUT', 50);
  if (type === 'cluster') return { ...common, cluster: url.split(',').map((s) => s.trim()) };
  if (type === 'sentinel') throw bad('REDIS_TYPE', 'sentinel is not supported by sluice yet; use single or cluster');
  if (type !== 'single') throw bad('REDIS_TYPE', `'${env.REDIS_TYPE}' is not single, sentinel or cluster`);
  const socket = (env.REDIS_SOCKET_TYPE || '').toLowerCase();
  const looksTcp = /^[^/]+:\d{1,5}$/.test(url);
  if (socket === 'unix' || (socket === '' && !looksTcp)) return { ...common, path: url };
  if (socket === '') {
    warnings.push(
      `REDIS_SOCKET_TYPE is not set (envoy's default is unix) but REDIS_URL '${url}' is host:port: using tcp`,
    );
  } else if (socket !== 'tcp') throw bad('REDIS_SOCKET_TYPE', `'${env.REDIS_SOCKET_TYPE}' is not tcp or unix`);
  return { ...common, url: `${tls ? 'rediss' : 'redis'}://${url}` };
}

/**
 * Service options from envoy ratelimit's environment variables, with its defaults.
 * @throws SluiceError `ERR_SLUICE_INVALID_OPTION` naming the variable, for a value envoy would refuse too.
 */
export function envoyServiceOptions(env: Env): EnvoyStart {
  const warnings: string[] = [];
  const options: ServiceOptions = {
    host: env.HOST || '0.0.0.0',
    port: port(env, 'PORT', 8080),
    grpcHost: env.GRPC_HOST || '0.0.0.0',
    grpcPort: port(env, 'GRPC_PORT', 8081),
    ...connectionAge(env),
    shadow: goBool(env, 'SHADOW_MODE', false),
    quotaMode: goBool(env, 'QUOTA_MODE', false),
    mergeDomains: goBool(env, 'MERGE_DOMAIN_CONFIG', false),
    dynamicMetadata: goBool(env, 'RESPONSE_DYNAMIC_METADATA', false),
    healthNeedsConfig: goBool(env, 'HEALTHY_WITH_AT_LEAST_ONE_CONFIG_LOADED', false),
    rateLimitHeaders: goBool(env, 'LIMIT_RESPONSE_HEADERS_ENABLED', false)
      ? {
          limit: env.LIMIT_LIMIT_HEADER || 'RateLimit-Limit',
          remaining: env.LIMIT_REMAINING_HEADER || 'RateLimit-Remaining',
          reset: env.LIMIT_RESET_HEADER || 'RateLimit-Reset',
        }
      : 'none',
  };
  if (env.GRPC_UDS) options.grpcSocket = env.GRPC_UDS;
  const level = env.LOG_LEVEL;
  if (level) {
    const mapped = LEVELS[level.toLowerCase()];
    if (mapped === undefined)
      throw bad('LOG_LEVEL', `'${level}' is not a log level (${Object.keys(LEVELS).join(', ')})`);
    options.logLevel = mapped;
  } else options.logLevel = 'warn';
  if (env.LOG_FORMAT && env.LOG_FORMAT.toLowerCase() !== 'json') {
    warnings.push(`LOG_FORMAT=${env.LOG_FORMAT}: sluice always logs JSON lines`);
  }

  const configType = (env.CONFIG_TYPE || 'FILE').toUpperCase();
  if (configType === 'FILE') {
    const root = env.RUNTIME_ROOT || '/srv/runtime_data/current';
    options.config = [join(root, env.RUNTIME_SUBDIRECTORY ?? '', env.RUNTIME_APPDIRECTORY || 'config')];
    options.configRoot = root;
    options.startWithoutConfig = true;
  } else if (configType === 'GRPC_XDS_SOTW') {
    const tls = goBool(env, 'CONFIG_GRPC_XDS_SERVER_USE_TLS', false);
    options.xds = {
      server: env.CONFIG_GRPC_XDS_SERVER_URL || 'localhost:18000',
      nodeId: env.CONFIG_GRPC_XDS_NODE_ID || 'default',
      nodeMetadata: nodeMetadata(env.CONFIG_GRPC_XDS_NODE_METADATA),
      headers: goMap(env, 'CONFIG_GRPC_XDS_CLIENT_ADDITIONAL_HEADERS'),
      retryMs: goDuration(env, 'CONFIG_GRPC_XDS_SERVER_CONNECT_RETRY_INTERVAL', 3000),
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
    };
  } else throw bad('CONFIG_TYPE', `'${env.CONFIG_TYPE}' is not FILE or GRPC_XDS_SOTW`);

  if (goBool(env, 'GRPC_SERVER_USE_TLS', false)) {
    const certFile = env.GRPC_SERVER_TLS_CERT;
    const keyFile = env.GRPC_SERVER_TLS_KEY;
    if (!certFile || !keyFile) {
      throw bad('GRPC_SERVER_USE_TLS', 'TLS needs GRPC_SERVER_TLS_CERT and GRPC_SERVER_TLS_KEY (files in PEM)');
    }
    options.grpcTls = {
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

  if (goBool(env, 'USE_PROMETHEUS', false)) {
    const at = listenAddress(env, 'PROMETHEUS_ADDR', ':9090');
    options.metricsListener = { ...at, path: env.PROMETHEUS_PATH || '/metrics' };
  }
  const redis = redisOptions(env, warnings);
  if (redis !== undefined) options.redis = redis;
  if (goBool(env, 'USE_STATSD', true) && env.USE_STATSD !== undefined) {
    warnings.push('USE_STATSD=true: sluice sends no statsd; scrape GET /metrics (or set USE_PROMETHEUS=true)');
  }
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
