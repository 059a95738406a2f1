import { Server, ServerCredentials, type ServerUnaryCall, type sendUnaryData, status } from '@grpc/grpc-js';
import { isSluiceError } from 'sluice';
import type { Decider } from '../decide.js';
import { isStoreError } from '../decide.js';
import { requestFromMessage } from '../envoy-codec.js';
import type { Logger } from '../logger.js';
import type { ServiceMetrics } from '../metrics.js';
import { RLS_SERVICE_DEFINITION } from './rls-definition.js';

/** A listening gRPC server. */
export interface GrpcHandle {
  readonly port: number;
  /** Stops taking calls, lets in-flight calls finish for up to `graceMs`, then cancels the rest. */
  close(graceMs: number): Promise<void>;
}

/** Options of {@link startGrpcServer}. */
export interface GrpcServerOptions {
  host: string;
  port: number;
  decider: Decider;
  metrics: ServiceMetrics;
  logger: Logger;
}

const CODE_NAMES: Record<number, string> = Object.fromEntries(
  Object.entries(status)
    .filter(([, v]) => typeof v === 'number')
    .map(([k, v]) => [v as number, k]),
);

/** The gRPC status of an error thrown while deciding. */
export function grpcStatusOf(error: unknown): number {
  if (
    isSluiceError(error) &&
    (error.code.startsWith('ERR_SLUICE_REQUEST_') || error.code === 'ERR_SLUICE_TOO_MANY_ITEMS')
  ) {
    return status.INVALID_ARGUMENT;
  }
  if (isStoreError(error)) return status.UNAVAILABLE;
  return status.INTERNAL;
}

/** Serves `envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit` on `host:port` (0 = any free port). */
export async function startGrpcServer(options: GrpcServerOptions): Promise<GrpcHandle> {
  const { decider, metrics, logger } = options;
  const server = new Server({
    'grpc.max_receive_message_length': 4 * 1024 * 1024,
    // Channelz (grpc-js's introspection service, which sluice does not serve) costs every call a tracker
    // object, four closures and two clock reads; off, as in grpc-js's own fast path.
    'grpc.enable_channelz': 0,
  });
  const fail = (callback: sendUnaryData<unknown>, error: unknown) => {
    const code = grpcStatusOf(error);
    metrics.grpc(CODE_NAMES[code] ?? String(code));
    if (code === status.INTERNAL) logger.error({ err: error }, 'ShouldRateLimit failed');
    else if (code === status.UNAVAILABLE) logger.warn({ err: (error as Error).message }, 'store unavailable');
    callback({ code, details: code === status.INTERNAL ? 'internal error' : (error as Error).message });
  };
  server.addService(RLS_SERVICE_DEFINITION, {
    ShouldRateLimit(call: ServerUnaryCall<unknown, unknown>, callback: sendUnaryData<unknown>) {
      let request: ReturnType<typeof requestFromMessage>;
      try {
        request = requestFromMessage(call.request);
      } catch (error) {
        fail(callback, error);
        return;
      }
      decider.decide(request, 'grpc').then(
        (decided) => {
          metrics.grpc('OK');
          callback(null, decided);
        },
        (error: unknown) => fail(callback, error),
      );
    },
  });
  const port = await new Promise<number>((resolve, reject) => {
    server.bindAsync(`${bracket(options.host)}:${options.port}`, ServerCredentials.createInsecure(), (error, bound) =>
      error ? reject(error) : resolve(bound),
    );
  });
  return {
    port,
    close(graceMs) {
      return new Promise((resolve) => {
        const timer = setTimeout(() => server.forceShutdown(), graceMs);
        timer.unref();
        server.tryShutdown(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    },
  };
}

function bracket(host: string): string {
  return host.includes(':') && !host.startsWith('[') ? `[${host}]` : host;
}
