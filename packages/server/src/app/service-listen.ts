/**
 * The service's listeners: the HTTP API, gRPC, the metrics listener and the gateway, bound in that order;
 * each one started joins the list `shutdown` closes, so a failed bind closes those already open.
 */

import type { Server } from 'node:http';
import type { TlsMaterial } from '../protocols/grpc/tls.js';
import { bindNamed, checkDistinctPorts, PORT_SETTINGS, type PortRequest } from './listen-ports.js';
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
  const requests = portRequests(options, entries);
  checkDistinctPorts(Object.values(requests));
  const http = await listenNamed(entries.api, requests.http);
  started.push(http);
  const grpcParts = {
    decider: core.decider,
    metrics: core.telemetry.metrics,
    logger: core.logger,
    health: entries.health,
    ...(tlsMaterial === undefined ? {} : { tlsMaterial }),
  };
  const startGrpc = () => startServiceGrpc(options, grpcParts);
  // On a unix socket (GRPC_UDS) no port is named: a stale socket file is replaced, never in use.
  const grpc = await (requests.grpc === undefined ? startGrpc() : bindNamed(requests.grpc, startGrpc));
  started.push(grpc);
  const listener = options.observability?.metricsListener;
  if (listener !== undefined && requests.metrics !== undefined) {
    const metricsServer = createMetricsServer(core.telemetry.listenerMetrics, listener.path);
    started.push(await listenNamed(metricsServer, requests.metrics));
  }
  const { gateway } = entries;
  const proxy =
    gateway === undefined || requests.gateway === undefined
      ? undefined
      : await listenNamed(gateway.server, requests.gateway);
  if (proxy !== undefined) started.push(proxy);
  return { http: http.port, grpc: grpc.port, proxy: proxy?.port };
}

function listenNamed(server: Server, request: PortRequest): Promise<Listening> {
  return bindNamed(request, () => listenDrained(server, request.port, request.host));
}

/** The TCP address each listener the options ask for will bind (gRPC on a unix socket has none). */
function portRequests(
  options: ServiceOptions,
  entries: Entries,
): { http: PortRequest; grpc?: PortRequest; metrics?: PortRequest; gateway?: PortRequest } {
  const host = options.host ?? '0.0.0.0';
  const grpc = options.grpc;
  const listener = options.observability?.metricsListener;
  return {
    http: { ...PORT_SETTINGS.http, host, port: options.http?.port ?? 8080 },
    ...(grpc?.socket === undefined
      ? { grpc: { ...PORT_SETTINGS.grpc, host: grpc?.host ?? host, port: grpc?.port ?? 8081 } }
      : {}),
    ...(listener === undefined
      ? {}
      : { metrics: { ...PORT_SETTINGS.metrics, host: listener.host, port: listener.port } }),
    ...(entries.gateway === undefined
      ? {}
      : { gateway: { ...PORT_SETTINGS.gateway, host, port: options.gateway?.port ?? 8000 } }),
  };
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
