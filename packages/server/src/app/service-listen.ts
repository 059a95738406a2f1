/**
 * The service's listeners: the HTTP API, gRPC, the metrics listener and the gateway, bound in that order;
 * each one started joins the list `shutdown` closes, so a failed bind closes those already open.
 */
import type { TlsMaterial } from '../protocols/grpc/tls.js';
import { createMetricsServer, type Listening, listenDrained } from './listeners.js';
import type { Core } from './service-core.js';
import type { Entries } from './service-entries.js';
import { startServiceGrpc } from './service-grpc.js';
import type { ServiceOptions } from './service-options.js';

/** The bound ports. */
export interface Ports {
  readonly http: number;
  readonly grpc: number;
  readonly proxy: number | undefined;
}

/** The listeners started so far, and how to stop them and the core's resources. */
export interface Listeners {
  readonly started: Listening[];
  /** Closes every listener started (in-flight requests get `graceMs`), then the capture, store and telemetry. */
  shutdown(): Promise<void>;
}

/** An empty list of listeners whose shutdown also closes `core`'s capture, store and telemetry. */
export function createListeners(core: Core, graceMs: number): Listeners {
  const started: Listening[] = [];
  return {
    started,
    async shutdown() {
      await Promise.all(started.map((s) => s.close(graceMs)));
      await core.capture?.close();
      await core.backend.shutdown();
      await core.telemetry.close();
    },
  };
}

/** Binds every listener the options ask for, pushing each onto `listeners.started` as it starts. */
export async function listenAll(
  options: ServiceOptions,
  core: Core,
  entries: Entries,
  listeners: Listeners,
  tlsMaterial: TlsMaterial | undefined,
): Promise<Ports> {
  const { started } = listeners;
  const host = options.host ?? '0.0.0.0';
  const http = await listenDrained(entries.api, options.http?.port ?? 8080, host);
  started.push(http);
  const grpc = await startServiceGrpc(options, {
    decider: core.decider,
    metrics: core.telemetry.metrics,
    logger: core.logger,
    health: entries.health,
    ...(tlsMaterial === undefined ? {} : { tlsMaterial }),
  });
  started.push(grpc);
  const listener = options.observability?.metricsListener;
  if (listener !== undefined) {
    const metricsServer = createMetricsServer(core.telemetry.listenerMetrics, listener.path);
    started.push(await listenDrained(metricsServer, listener.port, listener.host));
  }
  const { gateway } = entries;
  const proxy =
    gateway === undefined ? undefined : await listenDrained(gateway.server, options.gateway?.port ?? 8000, host);
  if (proxy !== undefined) started.push(proxy);
  return { http: http.port, grpc: grpc.port, proxy: proxy?.port };
}

/** The one line that says the service is up, and where. */
export function logListening(options: ServiceOptions, core: Core, entries: Entries, ports: Ports): void {
  const { logger, feed } = core;
  const status = feed.source.status;
  logger.info(
    {
      http: ports.http,
      grpc: options.grpc?.socket ?? ports.grpc,
      ...(ports.proxy === undefined ? {} : { proxy: ports.proxy, upstream: entries.gateway?.upstream.origin }),
      host: options.host ?? '0.0.0.0',
      store: core.backend.store.name,
      config:
        status.source === 'example'
          ? 'built-in example'
          : status.source === 'xds'
            ? `xds ${options.xds?.server}`
            : status.files,
      admin: options.adminToken ? 'on' : 'off',
    },
    'listening',
  );
  if (options.http?.clientClock === true) {
    logger.warn(
      "--client-clock: /v1/check decides at the caller's nowMs, so a caller can move its counters in time; for tests only",
    );
  }
}
