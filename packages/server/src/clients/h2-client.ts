/** A lean RLS client on Node's HTTP/2 (no gRPC framework), used by the load generator so the load costs little. */
import { type ClientHttp2Session, connect } from 'node:http2';
import { SHOULD_RATE_LIMIT_PATH } from '../rls/paths.js';
import { decodeOverallCode, encodeRateLimitRequestFrame } from '../rls/wire.js';

/** A request for {@link createH2RlsClient}: the engine's shape, encoded by hand. */
export type H2RlsRequest = Parameters<typeof encodeRateLimitRequestFrame>[0];

/** A lean RLS client on Node's HTTP/2, for load generation: it reads only `overall_code` back. */
export interface H2RlsClient {
  /**
   * Resolves with the response's overall code (`OK`, `OVER_LIMIT`), or rejects with the gRPC status. A
   * Buffer is sent as is: a request already framed with `encodeRateLimitRequestFrame`.
   */
  shouldRateLimit(request: H2RlsRequest | Buffer): Promise<string>;
  close(): void;
}

/**
 * Opens one HTTP/2 connection to `target` (`host:port`) that sends `ShouldRateLimit` calls. A
 * general-purpose gRPC client costs as much CPU per call as the service does; a load generator sharing
 * the machine must not, or it measures itself.
 */
export function createH2RlsClient(target: string): H2RlsClient {
  let session: ClientHttp2Session | undefined;
  const open = () => {
    if (session === undefined || session.closed || session.destroyed) {
      session = connect(`http://${target}`);
      session.on('error', () => {});
    }
    return session;
  };
  return {
    shouldRateLimit(request) {
      return new Promise((resolve, reject) => {
        const stream = open().request({
          ':method': 'POST',
          ':path': SHOULD_RATE_LIMIT_PATH,
          'content-type': 'application/grpc',
          te: 'trailers',
        });
        const chunks: Buffer[] = [];
        let status: string | undefined;
        stream.on('response', (headers) => {
          const s = headers['grpc-status'];
          if (s !== undefined) status = String(s);
        });
        stream.on('trailers', (trailers) => {
          status = String(trailers['grpc-status'] ?? status);
        });
        stream.on('data', (chunk: Buffer) => chunks.push(chunk));
        stream.on('error', reject);
        stream.on('close', () => {
          if (status !== '0') {
            reject(new Error(`grpc-status ${status ?? 'missing'}`));
            return;
          }
          const body = chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks);
          resolve(decodeOverallCode(body.subarray(5)));
        });
        stream.end(Buffer.isBuffer(request) ? request : encodeRateLimitRequestFrame(request));
      });
    },
    close: () => session?.close(),
  };
}
