/** The service's gRPC side: health (Check and Watch), the RLS server on its port or socket, and TLS files watched for reload. */
import type { Decider } from '../core/decide.js';
import type { Logger } from '../observability/logger.js';
import type { ServiceMetrics } from '../observability/metrics.js';
import { type GrpcHandle, startGrpcServer } from '../protocols/grpc/grpc-server.js';
import { grpcHealthCheck } from '../protocols/grpc/health-service.js';
import { createHealthWatch } from '../protocols/grpc/health-watch.js';
import { type TlsMaterial, watchTlsFiles } from '../protocols/grpc/tls.js';
import { freeSocketPath } from '../protocols/grpc/unix-socket.js';
import type { HealthReport } from './health.js';
import type { ServiceOptions } from './service-options.js';

/** What the gRPC side needs from the rest of the service. */
export interface GrpcParts {
  readonly decider: Decider;
  readonly metrics: ServiceMetrics;
  readonly logger: Logger;
  readonly health: () => Promise<HealthReport>;
  /** The certificates read (and checked) at start, with `grpc.tls`. */
  readonly tlsMaterial?: TlsMaterial;
}

/** A listening gRPC side; `close` ends Watch streams, then drains calls for up to `graceMs`. */
export interface ServiceGrpc {
  readonly port: number;
  close(graceMs: number): Promise<void>;
}

/** Starts the gRPC server as `options.grpc` says. */
export async function startServiceGrpc(options: ServiceOptions, parts: GrpcParts): Promise<ServiceGrpc> {
  const grpc = options.grpc ?? {};
  const { decider, metrics, logger, tlsMaterial } = parts;
  const check = grpcHealthCheck(async () => (await parts.health()).status === 200);
  // Watch streams the status; at shutdown they get NOT_SERVING and end, so they never hold the drain.
  const healthWatch = createHealthWatch({ ...grpc.watchLimits, check });
  if (grpc.socket !== undefined) await freeSocketPath(grpc.socket);
  let server: GrpcHandle;
  try {
    server = await startGrpcServer({
      host: grpc.host ?? options.host ?? '0.0.0.0',
      port: grpc.port ?? 8081,
      ...(grpc.socket === undefined ? {} : { socket: grpc.socket }),
      ...(grpc.keepalive === undefined ? {} : { keepalive: grpc.keepalive }),
      ...(grpc.limits === undefined ? {} : { limits: grpc.limits }),
      ...(grpc.maxStreams === undefined ? {} : { maxStreams: grpc.maxStreams }),
      ...(grpc.maxConnectionAgeMs === undefined ? {} : { maxConnectionAgeMs: grpc.maxConnectionAgeMs }),
      ...(grpc.maxConnectionAgeGraceMs === undefined ? {} : { maxConnectionAgeGraceMs: grpc.maxConnectionAgeGraceMs }),
      ...(tlsMaterial === undefined
        ? {}
        : {
            tls: {
              material: tlsMaterial,
              ...(grpc.tls?.clientSan === undefined ? {} : { clientSan: grpc.tls.clientSan }),
            },
          }),
      decider,
      metrics,
      logger,
      health: check,
      healthWatch,
    });
  } catch (error) {
    healthWatch.close();
    throw error;
  }
  const stopTls =
    grpc.tls === undefined || tlsMaterial === undefined ? () => {} : reloadTls(grpc.tls, tlsMaterial, server, logger);
  return {
    port: server.port,
    async close(graceMs) {
      stopTls();
      healthWatch.close();
      await server.close(graceMs);
    },
  };
}

/** Watches the TLS files: new connections get the new certificates; a bad file keeps the last good ones. */
function reloadTls(
  files: NonNullable<NonNullable<ServiceOptions['grpc']>['tls']>,
  material: TlsMaterial,
  server: GrpcHandle,
  logger: Logger,
): () => void {
  return watchTlsFiles(
    files,
    material,
    (next) => {
      server.updateTls?.(next);
      logger.info({ cert: files.certFile }, 'gRPC TLS certificates reloaded');
    },
    // An error, not a warning: the files on disk (e.g. an expired certificate) will stop the next start.
    (error) =>
      logger.error(
        { err: error.message, code: (error as { code?: string }).code },
        'gRPC TLS files not reloaded; keeping the last good ones',
      ),
  );
}
