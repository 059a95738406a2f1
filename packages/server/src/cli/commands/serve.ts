/** `sluice serve`: its help, and running the service until a signal stops it. */
import { writeFileSync } from 'node:fs';
import { isSluiceError } from 'sluice';
import { EXAMPLE_CONFIG, LOG_LEVELS, startService } from '../../index.js';
import type { Command } from '../command.js';
import { watchParent } from '../parent-watch.js';
import { quietGrpcBindFailure } from './grpc-bind-log.js';
import { LIMIT_FLAGS_HELP, LimitFlagError } from './limit-flags.js';
import { MULTI_REGION_HELP } from './serve-multi-region.js';
import { serveOptions, UsageError } from './serve-options.js';

export { serveOptions } from './serve-options.js';

const HELP = `usage: sluice serve [--config PATH] [--redis URL | --redis-cluster HOST:PORT,...] [--upstream URL]

Runs the rate-limit service:
  gRPC  envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit (what Envoy's ratelimit filter calls)
  HTTP  POST /json, POST /v1/check, GET /healthcheck, GET /metrics, /admin/..., the dashboard at /
  with --upstream, a gateway that applies the config's http: rules and proxies to the upstream.
Without --config it uses a built-in example rule set (printed at start); without Redis, an in-memory store.
Logs are JSON lines on stdout. SIGTERM or SIGINT stops it gracefully (in-flight requests finish; exit 0);
so does the end of the npm process that started it (npx sluice serve, npm start), which npm 11 does not signal.

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
  --reservation-ttl D    /v1/check: how long a reserve may stay unsettled; it then stays charged (default 10m)
  --max-reservations N   /v1/check: most reservations held at once; past it a reserve is refused (default 100000)
  --client-clock         /v1/check takes the caller's nowMs (tests driving time via sluice/remote; never in production)
  --trust-proxy LIST     gateway: proxies whose X-Forwarded-For is believed (CIDRs, loopback, ...)
  --adaptive ALG         gateway: shed with 503 past an adaptive concurrency limit that follows the
                         upstream's latency (gradient2, vegas or aimd; docs/overload.md)
  --capture DIR          write sampled decisions (gRPC, /json, /v1/check, gateway) as NDJSON in DIR, for
                         sluice replay; the key hash secret from SLUICE_CAPTURE_SECRET (docs/explain-and-replay.md)
  --capture-sample R     share of keys captured, 0..1; a key is in or out for good (default 0.1)
  --capture-max-bytes N  all capture files together (N, or with kb/mb/gb; default 256mb); oldest deleted past it
  --capture-raw-keys     write descriptor values as sent instead of keyed hashes
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
    quietGrpcBindFailure();
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
      const stop = (signal: NodeJS.Signals | 'parent-exit') => {
        if (stopping) {
          // A second signal: the operator does not want to wait.
          service.logger.warn({ signal }, 'second signal; exiting now');
          process.exit(1);
        }
        stopping = true;
        unwatch();
        service.logger.info(
          { signal },
          signal === 'parent-exit' ? 'the npm process that started sluice exited; shutting down' : 'shutting down',
        );
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
      const unwatch = watchParent(() => stop('parent-exit'));
      process.on('SIGTERM', stop);
      process.on('SIGINT', stop);
    });
  },
};
