/** An Envoy RLS client on @grpc/grpc-js, for tests, the CLI and users calling the service from Node. */
import {
  type ChannelCredentials,
  type ChannelOptions,
  credentials,
  makeGenericClientConstructor,
  type ServiceError,
} from '@grpc/grpc-js';
import { loadRateLimitService } from '../support/proto.js';

/** A `RateLimitResponse` as grpc-js decodes it (camelCase, enums by name). */
export interface RlsResponse {
  overallCode?: 'UNKNOWN' | 'OK' | 'OVER_LIMIT';
  statuses?: {
    code?: string;
    currentLimit?: { name?: string; requestsPerUnit?: number; unit?: string } | null;
    limitRemaining?: number;
    durationUntilReset?: { seconds?: number; nanos?: number } | null;
  }[];
  responseHeadersToAdd?: { key: string; value: string }[];
}

/** A minimal RLS v3 client: what `sluice check` and `sluice bench` use, and what tests can use. */
export interface RlsClient {
  shouldRateLimit(request: Record<string, unknown>, deadlineMs?: number): Promise<RlsResponse>;
  close(): void;
}

/**
 * Creates a client of `envoy.service.ratelimit.v3.RateLimitService` at `target` (`host:port`), over an
 * insecure channel unless `channelCredentials` say otherwise (TLS). `options` are grpc-js channel options.
 * @example const client = createRlsClient('127.0.0.1:8081'); await client.shouldRateLimit({ domain, descriptors });
 */
export function createRlsClient(
  target: string,
  options: ChannelOptions = {},
  channelCredentials: ChannelCredentials = credentials.createInsecure(),
): RlsClient {
  const Client = makeGenericClientConstructor(loadRateLimitService(), 'RateLimitService');
  const client = new Client(target, channelCredentials, options) as unknown as {
    ShouldRateLimit(
      request: Record<string, unknown>,
      options: { deadline?: Date },
      callback: (error: ServiceError | null, response: RlsResponse) => void,
    ): void;
    close(): void;
  };
  return {
    shouldRateLimit(request, deadlineMs) {
      return new Promise((resolve, reject) => {
        client.ShouldRateLimit(
          request,
          deadlineMs === undefined ? {} : { deadline: new Date(Date.now() + deadlineMs) },
          (error, response) => (error ? reject(error) : resolve(response)),
        );
      });
    },
    close: () => client.close(),
  };
}
