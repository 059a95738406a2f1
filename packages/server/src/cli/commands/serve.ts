import { writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { isSluiceError, parseDuration } from 'sluice';
import type { FailMode } from 'sluice/rules';
import { envoyServiceOptions, isEnvoyStart } from '../../app/envoy-settings.js';
import type { LogLevel, ServiceOptions } from '../../index.js';
import { EXAMPLE_CONFIG, LOG_LEVELS, startService } from '../../index.js';
import type { Command } from '../command.js';
import { applyLimitFlags, LIMIT_FLAGS, LIMIT_FLAGS_HELP, LimitFlagError } from './limit-flags.js';
import { MULTI_REGION_FLAGS, MULTI_REGION_HELP, multiRegionOptions } from './serve-multi-region.js';

const HELP = `usage: sluice serve [--config PATH] [--redis URL | --redis-cluster HOST:PORT,...] [--upstream URL]

Runs the rate-limit service:
  gRPC  envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit (what Envoy's ratelimit filter calls)
  HTTP  POST /json, POST /v1/check, GET /healthcheck, GET /metrics, /admin/..., the dashboard at /
  with --upstream, a gateway that applies the config's http: rules and proxies to the upstream.
Without --config it uses a built-in example rule set (printed at start); without Redis, an in-memory store.
Logs are JSON lines on stdout. SIGTERM or SIGINT stops it gracefully (in-flight requests finish; exit 0).

options:
  --config PATH          rules file or directory; repeat for several          [env SLUICE_CONFIG, comma-separated]
  --redis URL            Redis server, e.g. redis://127.0.0.1:6379             [env REDIS_URL]
  --redis-cluster LIST   Redis Cluster seed nodes, host:port,host:port,...
  --redis-prefix P       key prefix of the counters in Redis (default sluice:)
  --redis-timeout D      longest wait for Redis per decision before the failure policy answers (default 50ms)
${MULTI_REGION_HELP}
  --upstream URL         gateway mode: proxy to URL after rate limiting
  --host HOST            interface to listen on (default 0.0.0.0)              [env HOST]
  --port N               HTTP API port (default 8080; 0 = any free port)       [env PORT]
  --grpc-port N          gRPC port (default 8081)                              [env GRPC_PORT]
  --proxy-port N         gateway port (default 8000)                           [env PROXY_PORT]
  --grpc-server IMPL     grpc-js (@grpc/grpc-js, default) or h2 (sluice's lean RLS server on Node's HTTP/2)
  --fail MODE            open | closed | insurance: when the store fails, for rules that do not say
                         (default: the store's error, i.e. gRPC UNAVAILABLE / HTTP 503)
  --insurance-share F    with --fail insurance: the share (0 < F <= 1) of each limit this process
                         enforces alone while the store is down, e.g. 0.25 for four replicas (default 1)
  --memory-max-keys N    most keys the memory store keeps; the least recently used go first
  --memory-max-bytes N   most bytes of state the memory store keeps (N, or with kb/mb/gb; default 128mb)
                         (default 1000000; not with --redis)
  --shadow               every rule in shadow mode: count and report, never reject
  --max-descriptor-series N  most per-value series of detailed_metric/value_to_metric rules in /metrics;
                         later values count under descriptor="_overflow_" (default 10000; 1 to 1000000)
  --client-clock         /v1/check takes the caller's nowMs (tests driving time via sluice/remote; never in production)
  --trust-proxy LIST     gateway: proxies whose X-Forwarded-For is believed (CIDRs, loopback, ...)
  --no-watch             do not reload when the config files change
  --max-body BYTES       largest API request body (default 1048576)
  --shutdown-grace D     how long in-flight requests may take at shutdown (default 10s)
  --log-level LEVEL      ${LOG_LEVELS.join(' | ')} (default info)              [env LOG_LEVEL]
  --ports-file FILE      write {"http":N,"grpc":N,"proxy":N} to FILE once listening (handy with port 0)
  --envoy-compat         start as envoyproxy/ratelimit does: its environment variables (RUNTIME_ROOT,
                         REDIS_URL, LIMIT_RESPONSE_HEADERS_ENABLED, GRPC_SERVER_USE_TLS, ...) configure
                         the service and its behaviour; on by itself when RUNTIME_ROOT or CONFIG_TYPE is
                         set. Flags still win. See docs/envoy.md.
  -h, --help             show this help

${LIMIT_FLAGS_HELP}
environment:
  SLUICE_ADMIN_TOKEN     turns the admin API on: requests need Authorization: Bearer <token>

examples:
  sluice serve
  sluice serve --config rules.yaml --redis redis://redis.eu:6379 --region eu \\
    --region-peer us=redis://redis.us:6379 --region-peer ap=redis://redis.ap:6379
  sluice serve --config ./ratelimit-config --redis redis://127.0.0.1:6379
  sluice serve --config rules.yaml --upstream http://127.0.0.1:3000 --proxy-port 8000
`;

const FAIL_MODES: readonly FailMode[] = ['open', 'closed', 'insurance'];

function port(value: string | undefined, name: string): number | undefined {
  if (value === undefined || value === '') return undefined;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0 || n > 65535) throw new UsageError(`${name}: '${value}' is not a port (0-65535)`);
  return n;
}

/** Bad usage (exit 2); `code` is the SluiceError code a program can match on in `--json`-less stderr. */
class UsageError extends Error {
  constructor(
    message: string,
    readonly code = 'ERR_SLUICE_USAGE',
  ) {
    super(message);
  }
}

/** A flag's whole number between `min` and `max` (digits only: '1e3', '0x10' and '' are refused). */
function wholeNumber(text: string, flag: string, min: number, max: number): number {
  const n = /^\d+$/.test(text.trim()) ? Number(text) : Number.NaN;
  if (!Number.isSafeInteger(n) || n < min || n > max) {
    throw new UsageError(`${flag}: '${text}' is not a whole number from ${min} to ${max}`, 'ERR_SLUICE_INVALID_OPTION');
  }
  return n;
}

/** Turns flags and environment into service options; flags win over the environment. */
export function serveOptions(
  argv: readonly string[],
  processEnv: NodeJS.ProcessEnv,
): { options: ServiceOptions; warnings: string[]; portsFile?: string } {
  const { values } = parseArgs({
    args: [...argv],
    strict: true,
    allowPositionals: false,
    options: {
      config: { type: 'string', multiple: true },
      redis: { type: 'string' },
      'redis-cluster': { type: 'string' },
      'redis-prefix': { type: 'string' },
      'redis-timeout': { type: 'string' },
      upstream: { type: 'string' },
      host: { type: 'string' },
      port: { type: 'string' },
      'grpc-port': { type: 'string' },
      'grpc-server': { type: 'string' },
      'proxy-port': { type: 'string' },
      fail: { type: 'string' },
      'insurance-share': { type: 'string' },
      'memory-max-keys': { type: 'string' },
      'memory-max-bytes': { type: 'string' },
      shadow: { type: 'boolean' },
      'max-descriptor-series': { type: 'string' },
      'client-clock': { type: 'boolean' },
      'trust-proxy': { type: 'string' },
      'no-watch': { type: 'boolean' },
      'max-body': { type: 'string' },
      'shutdown-grace': { type: 'string' },
      ...LIMIT_FLAGS,
      'log-level': { type: 'string' },
      'ports-file': { type: 'string' },
      ...MULTI_REGION_FLAGS,
      'envoy-compat': { type: 'boolean' },
    },
  });
  const envoy = values['envoy-compat'] === true || isEnvoyStart(processEnv);
  const base = envoy ? envoyServiceOptions(processEnv) : undefined;
  const options: ServiceOptions = base?.options ?? {};
  // In envoy mode the environment speaks envoy's language (REDIS_URL is host:port, LOG_LEVEL is WARN...):
  // sluice's own readings of those names are skipped, and only flags override.
  const env: NodeJS.ProcessEnv = envoy ? { SLUICE_ADMIN_TOKEN: processEnv.SLUICE_ADMIN_TOKEN } : processEnv;
  const config = values.config ?? (env.SLUICE_CONFIG ? env.SLUICE_CONFIG.split(',').filter(Boolean) : undefined);
  if (config !== undefined && config.length > 0) options.config = config;
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
    options.redis = { cluster: nodes };
  } else if (redisUrl !== undefined && redisUrl !== '') {
    options.redis = { url: redisUrl };
  }
  if (options.redis !== undefined && values['redis-prefix'] !== undefined)
    options.redis.prefix = values['redis-prefix'];
  if (options.redis !== undefined && values['redis-timeout'] !== undefined) {
    options.redis.timeoutMs = parseDuration(values['redis-timeout'], '--redis-timeout');
  }
  // Several regions: this region's Redis (--redis) becomes one of the multi-region store's.
  const multiRegion = multiRegionOptions(values, env, redisUrl);
  if (multiRegion !== undefined) {
    if (cluster !== undefined) throw new UsageError("--region: give this region's Redis with --redis URL");
    delete options.redis;
    if (values['redis-prefix'] !== undefined) multiRegion.prefix = values['redis-prefix'];
    if (values['redis-timeout'] !== undefined) {
      multiRegion.timeoutMs = parseDuration(values['redis-timeout'], '--redis-timeout');
    }
    options.multiRegion = multiRegion;
  }
  if (values.upstream !== undefined) options.upstream = values.upstream;
  const host = values.host ?? env.HOST;
  if (host) options.host = host;
  const httpPort = port(values.port ?? env.PORT, '--port');
  if (httpPort !== undefined) options.port = httpPort;
  const grpcPort = port(values['grpc-port'] ?? env.GRPC_PORT, '--grpc-port');
  if (grpcPort !== undefined) options.grpcPort = grpcPort;
  const proxyPort = port(values['proxy-port'] ?? env.PROXY_PORT, '--proxy-port');
  if (proxyPort !== undefined) options.proxyPort = proxyPort;
  const grpcServer = values['grpc-server'];
  if (grpcServer !== undefined) {
    if (grpcServer !== 'h2' && grpcServer !== 'grpc-js') throw new UsageError('--grpc-server: h2 or grpc-js');
    options.grpcServer = grpcServer;
  }
  if (values.fail !== undefined) {
    if (!FAIL_MODES.includes(values.fail as FailMode)) throw new UsageError(`--fail: use ${FAIL_MODES.join(', ')}`);
    options.fail = values.fail as FailMode;
  }
  if (values['insurance-share'] !== undefined) {
    const share = Number(values['insurance-share']);
    if (options.fail !== 'insurance') {
      throw new UsageError('--insurance-share: only applies with --fail insurance', 'ERR_SLUICE_INVALID_OPTION');
    }
    if (values['insurance-share'].trim() === '' || !Number.isFinite(share) || share <= 0 || share > 1) {
      throw new UsageError(
        `--insurance-share: '${values['insurance-share']}' is not a number above 0 and at most 1 (e.g. 0.25)`,
        'ERR_SLUICE_INVALID_OPTION',
      );
    }
    options.insuranceShare = share;
  }
  if (values['memory-max-keys'] !== undefined) {
    if (options.redis !== undefined) {
      throw new UsageError(
        '--memory-max-keys: sizes the memory store; with --redis there is none',
        'ERR_SLUICE_INVALID_OPTION',
      );
    }
    options.memory = { maxKeys: wholeNumber(values['memory-max-keys'], '--memory-max-keys', 1, 2 ** 30) };
  }
  if (values['memory-max-bytes'] !== undefined) {
    if (options.redis !== undefined) {
      throw new UsageError(
        '--memory-max-bytes: sizes the memory store; with --redis there is none',
        'ERR_SLUICE_INVALID_OPTION',
      );
    }
    options.memory = { ...options.memory, maxBytes: byteSize(values['memory-max-bytes'], '--memory-max-bytes') };
  }
  if (values.shadow) options.shadow = true;
  if (values['max-descriptor-series'] !== undefined) {
    options.maxDescriptorSeries = wholeNumber(values['max-descriptor-series'], '--max-descriptor-series', 1, 1_000_000);
  }
  if (values['client-clock']) options.clientClock = true;
  if (values['trust-proxy'] !== undefined) options.trustProxy = values['trust-proxy'].split(',').map((s) => s.trim());
  if (values['no-watch']) options.watch = false;
  if (values['max-body'] !== undefined) {
    const n = Number(values['max-body']);
    if (!Number.isInteger(n) || n < 1) throw new UsageError('--max-body: expected a whole number of bytes');
    options.maxBodyBytes = n;
  }
  if (values['shutdown-grace'] !== undefined)
    options.shutdownGraceMs = parseDuration(values['shutdown-grace'], '--shutdown-grace');
  const level = values['log-level'] ?? env.LOG_LEVEL;
  if (level !== undefined && level !== '') {
    if (!(LOG_LEVELS as readonly string[]).includes(level))
      throw new UsageError(`--log-level: use ${LOG_LEVELS.join(', ')}`);
    options.logLevel = level as LogLevel;
  }
  const token = env.SLUICE_ADMIN_TOKEN;
  if (token !== undefined && token !== '') options.adminToken = token;
  applyLimitFlags(values, options);
  const warnings = base?.warnings ?? [];
  return values['ports-file'] === undefined
    ? { options, warnings }
    : { options, warnings, portsFile: values['ports-file'] };
}

/** `sluice serve`. */
export const serveCommand: Command = {
  name: 'serve',
  summary: 'run the rate-limit service (Envoy gRPC, HTTP/JSON, gateway, metrics, admin)',
  help: HELP,
  async run(argv, io) {
    let parsed: ReturnType<typeof serveOptions>;
    try {
      parsed = serveOptions(argv, process.env);
    } catch (error) {
      if (
        error instanceof UsageError ||
        error instanceof LimitFlagError ||
        /^ERR_(PARSE_ARGS|SLUICE)/.test(String((error as { code?: string }).code))
      ) {
        const code = (error as { code?: string }).code;
        io.err(`sluice serve: ${(error as Error).message}${code ? ` (${code})` : ''}\n\n${HELP}`);
        return 2;
      }
      throw error;
    }
    const { options, portsFile } = parsed;
    if (options.config === undefined && options.xds === undefined) {
      io.err(`sluice: no --config given; serving the built-in example rules:\n\n${EXAMPLE_CONFIG}`);
    }
    let service: Awaited<ReturnType<typeof startService>>;
    try {
      service = await startService(options);
    } catch (error) {
      // The code too (e.g. ERR_SLUICE_TLS_INVALID for an expired certificate), for whoever matches on it.
      const code = isSluiceError(error) ? ` (${error.code})` : '';
      io.err(`sluice serve: ${error instanceof Error ? error.message : String(error)}${code}`);
      return 1;
    }
    for (const warning of parsed.warnings) service.logger.warn({ envoy: true }, warning);
    if (portsFile !== undefined) {
      const ports = {
        http: service.httpPort,
        grpc: service.grpcPort,
        ...(service.proxyPort === undefined ? {} : { proxy: service.proxyPort }),
      };
      writeFileSync(portsFile, `${JSON.stringify(ports)}\n`);
    }
    return new Promise<number>((resolve) => {
      let stopping = false;
      const stop = (signal: NodeJS.Signals) => {
        if (stopping) {
          // A second signal: the operator does not want to wait.
          service.logger.warn({ signal }, 'second signal; exiting now');
          process.exit(1);
        }
        stopping = true;
        service.logger.info({ signal }, 'shutting down');
        service.close().then(
          () => {
            // Should anything still hold the event loop (a stuck socket), do not hang the exit.
            setTimeout(() => process.exit(0), 2000).unref();
            resolve(0);
          },
          (error: unknown) => {
            service.logger.error({ err: error }, 'shutdown failed');
            resolve(1);
          },
        );
      };
      process.on('SIGTERM', stop);
      process.on('SIGINT', stop);
    });
  },
};

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
