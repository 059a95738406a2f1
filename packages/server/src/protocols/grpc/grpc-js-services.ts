/**
 * What grpc-js itself serves: ShouldRateLimit when the lean path is off (or unknown to this grpc-js), and
 * `grpc.health.v1.Health` Check and Watch; with a required client SAN, every call checks it.
 */
import {
  type Server,
  type ServerUnaryCall,
  type ServerWritableStream,
  type sendUnaryData,
  status,
} from '@grpc/grpc-js';
import { isSluiceError } from 'sluice';
import type { RateLimitRequest } from 'sluice/rules';
import type { Decided } from '../../core/decide.js';
import { isStoreError } from '../../core/decide.js';
import { requestFromWire } from '../../rls/codec.js';
import type { WireRequest } from '../../rls/wire.js';
import type { GrpcServerOptions } from './grpc-server-options.js';
import { loadHealthService } from './health-service.js';
import { grpcJsWatchHandler } from './health-watch-streams.js';
import { RLS_SERVICE_DEFINITION } from './rls-definition.js';
import { certificateHasSan } from './tls.js';

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

/** Adds ShouldRateLimit and, with `options.health`, the health service to `server`. */
export function addGrpcJsServices(server: Server, options: GrpcServerOptions): void {
  const { decider, metrics, logger } = options;
  const clientSan = options.tls?.clientSan;
  const fail = (callback: sendUnaryData<Decided>, error: unknown) => {
    const code = grpcStatusOf(error);
    metrics.grpc(CODE_NAMES[code] ?? String(code));
    if (code === status.INTERNAL) logger.error({ err: error }, 'ShouldRateLimit failed');
    else if (code === status.UNAVAILABLE) logger.warn({ err: (error as Error).message }, 'store unavailable');
    callback({ code, details: code === status.INTERNAL ? 'internal error' : (error as Error).message });
  };
  /** With mutual TLS and a required SAN: whether this call's client certificate lacks it (then refuse it). */
  const wrongClient = (call: { getAuthContext(): { sslPeerCertificate?: unknown } }) =>
    clientSan !== undefined &&
    !certificateHasSan(call.getAuthContext().sslPeerCertificate as Parameters<typeof certificateHasSan>[0], clientSan);
  const wrongClientError = {
    code: status.UNAUTHENTICATED,
    details: `the client certificate does not name ${clientSan}`,
  };
  server.addService(RLS_SERVICE_DEFINITION, {
    ShouldRateLimit(call: ServerUnaryCall<WireRequest, Decided>, callback: sendUnaryData<Decided>) {
      if (wrongClient(call)) {
        metrics.grpc('UNAUTHENTICATED');
        callback(wrongClientError);
        return;
      }
      let request: RateLimitRequest;
      try {
        request = requestFromWire(call.request);
      } catch (error) {
        fail(callback, error);
        return;
      }
      decider.decide(request, 'grpc', call.metadata).then(
        (decided) => {
          metrics.grpc('OK');
          callback(null, decided);
        },
        (error: unknown) => fail(callback, error),
      );
    },
  });
  const health = options.health;
  if (health !== undefined) {
    const watch = options.healthWatch === undefined ? undefined : grpcJsWatchHandler(options.healthWatch);
    server.addService(loadHealthService(), {
      // Health calls are refused to a client certificate without the SAN, as ShouldRateLimit is.
      Check(call: ServerUnaryCall<{ service?: string }, unknown>, callback: sendUnaryData<unknown>) {
        if (wrongClient(call)) {
          metrics.grpc('UNAUTHENTICATED');
          callback(wrongClientError);
          return;
        }
        health(call.request.service ?? '').then(
          (answer) =>
            answer === undefined
              ? callback({ code: status.NOT_FOUND, details: 'unknown service' })
              : callback(null, { status: answer }),
          () => callback(null, { status: 'NOT_SERVING' }),
        );
      },
      ...(watch === undefined
        ? {}
        : {
            Watch(call: ServerWritableStream<{ service?: string }, unknown>) {
              if (wrongClient(call)) {
                metrics.grpc('UNAUTHENTICATED');
                call.emit('error', wrongClientError);
                return;
              }
              watch(call);
            },
          }),
    });
  }
}
