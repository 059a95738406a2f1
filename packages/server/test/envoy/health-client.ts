/**
 * Clients of `grpc.health.v1.Health/Watch` for the tests: the grpc-js client built from the shipped
 * health.proto (what a Go or Java program's generated client does), and a raw HTTP/2 one that shows
 * what travels on the connection (GOAWAY, a stream cut without trailers) and can hold streams open
 * without reading them.
 */
import { type ClientHttp2Session, type ClientHttp2Stream, connect } from 'node:http2';
import { connect as connectSocket } from 'node:net';
import {
  type ChannelCredentials,
  type ClientReadableStream,
  credentials,
  loadPackageDefinition,
  makeGenericClientConstructor,
  type ServiceError,
} from '@grpc/grpc-js';
import { loadSync } from '@grpc/proto-loader';
import { PROTO_DIR } from '../../src/support/proto.js';

const NAMES = ['UNKNOWN', 'SERVING', 'NOT_SERVING', 'SERVICE_UNKNOWN'];

/** The statuses a watch received, in order, and how its call ended. */
export interface WatchLog {
  readonly statuses: string[];
  /** Resolves with the `count`-th status (1-based) once it has arrived. */
  nth(count: number): Promise<string>;
  /** The call's end: its gRPC status (undefined when the stream was cut without one). */
  readonly ended: Promise<{ code: number | undefined; details?: string }>;
  cancel(): void;
}

function makeLog(): { log: Omit<WatchLog, 'ended' | 'cancel'>; push(status: string): void; wake(): void } {
  const statuses: string[] = [];
  const waiters = new Set<() => void>();
  let over = false;
  const wake = () => {
    for (const w of waiters) w();
  };
  return {
    log: {
      statuses,
      nth: (count) =>
        new Promise((resolve, reject) => {
          const check = () => {
            if (statuses.length >= count) {
              waiters.delete(check);
              resolve(statuses[count - 1] as string);
            } else if (over) {
              waiters.delete(check);
              reject(new Error(`the watch ended after ${statuses.join(', ') || 'no status'}`));
            }
          };
          waiters.add(check);
          check();
        }),
    },
    push(status) {
      statuses.push(status);
      wake();
    },
    wake() {
      over = true;
      wake();
    },
  };
}

/** Watches `service` with a grpc-js client (over `creds`, plain text by default). */
export function grpcJsWatch(
  address: string,
  service: string,
  creds: ChannelCredentials = credentials.createInsecure(),
): WatchLog & { close(): void } {
  const definition = loadPackageDefinition(
    loadSync('grpc/health/v1/health.proto', { includeDirs: [PROTO_DIR], enums: String, defaults: true }),
  ) as unknown as { grpc: { health: { v1: { Health: { service: never } } } } };
  const Client = makeGenericClientConstructor(definition.grpc.health.v1.Health.service, 'Health');
  const client = new Client(address, creds) as unknown as {
    Watch(req: unknown): ClientReadableStream<{ status: string }>;
    close(): void;
  };
  const call = client.Watch({ service });
  const { log, push, wake } = makeLog();
  call.on('data', (r: { status: string }) => push(r.status));
  const ended = new Promise<{ code: number | undefined; details?: string }>((resolve) => {
    call.on('error', (e: ServiceError) => {
      wake();
      resolve({ code: e.code, details: e.details });
    });
    call.on('status', (s: { code: number; details: string }) => {
      wake();
      resolve({ code: s.code, details: s.details });
    });
  });
  return { ...log, ended, cancel: () => call.cancel(), close: () => client.close() };
}

/** A `HealthCheckRequest` for `service` as one gRPC frame. */
export function healthRequestFrame(service: string): Buffer {
  const name = Buffer.from(service);
  const message = name.length === 0 ? Buffer.alloc(0) : Buffer.concat([Buffer.from([0x0a, name.length]), name]);
  const prefix = Buffer.alloc(5);
  prefix.writeUInt32BE(message.length, 1);
  return Buffer.concat([prefix, message]);
}

/** A raw HTTP/2 session to `authority` (`http://127.0.0.1:port`, or with `socketPath`, over a unix socket). */
export function rawSession(authority: string, socketPath?: string): ClientHttp2Session {
  const session =
    socketPath === undefined
      ? connect(authority)
      : connect(authority, { createConnection: () => connectSocket(socketPath) });
  session.on('error', () => {});
  return session;
}

/** A Watch on a raw session. `read: false` never consumes the response (a client that does not read). */
export function rawWatch(
  session: ClientHttp2Session,
  service: string,
  read = true,
): WatchLog & { stream: ClientHttp2Stream; headers: Promise<Record<string, unknown>> } {
  const stream = session.request({
    ':method': 'POST',
    ':path': '/grpc.health.v1.Health/Watch',
    'content-type': 'application/grpc',
    te: 'trailers',
  });
  stream.on('error', () => {});
  stream.end(healthRequestFrame(service));
  const { log, push, wake } = makeLog();
  let buffer = Buffer.alloc(0);
  if (read) {
    stream.on('data', (chunk: Buffer) => {
      buffer = Buffer.concat([buffer, chunk]);
      while (buffer.length >= 5 && buffer.length >= 5 + buffer.readUInt32BE(1)) {
        const message = buffer.subarray(5, 5 + buffer.readUInt32BE(1));
        buffer = buffer.subarray(5 + message.length);
        push(NAMES[message.length >= 2 ? (message[1] as number) : 0] as string);
      }
    });
  }
  let code: number | undefined;
  let details: string | undefined;
  const headers = new Promise<Record<string, unknown>>((resolve) => {
    stream.once('response', (h) => {
      if (h['grpc-status'] !== undefined) {
        code = Number(h['grpc-status']);
        details = String(h['grpc-message'] ?? '');
      }
      resolve(h as Record<string, unknown>);
    });
  });
  stream.on('trailers', (t) => {
    code = Number(t['grpc-status']);
    details = decodeURIComponent(String(t['grpc-message'] ?? ''));
  });
  const ended = new Promise<{ code: number | undefined; details?: string }>((resolve) => {
    stream.once('close', () => {
      wake();
      resolve(details === undefined ? { code } : { code, details });
    });
  });
  return { ...log, ended, stream, headers, cancel: () => stream.close() };
}
