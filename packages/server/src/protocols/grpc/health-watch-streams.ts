import type { ServerHttp2Stream } from 'node:http2';
import { type ServerWritableStream, status } from '@grpc/grpc-js';
import { peerKey } from '../http/peer-key.js';
import { encodeHealthResponseFrame } from './health-service.js';
import type { HealthWatch, WatchSink } from './health-watch.js';
import { isAnswerable } from './receive-guard.js';

const SHUTTING_DOWN = 'the server is shutting down';
const TOO_MANY =
  'too many health watches open (on this connection, from this address or in all); use Check, or retry later';

/** The address of a grpc-js peer (`1.2.3.4:5678`, `[::1]:5678`), without its port. */
function addressOf(peer: string): string {
  const bracket = peer.match(/^\[([^\]]+)\]:\d+$/);
  if (bracket !== null) return bracket[1] as string;
  const colon = peer.lastIndexOf(':');
  return colon > 0 && !peer.slice(0, colon).includes(':') ? peer.slice(0, colon) : peer;
}

/** `grpc.health.v1.Health/Watch` for the grpc-js server. */
export function grpcJsWatchHandler(watch: HealthWatch) {
  return (call: ServerWritableStream<{ service?: string }, unknown>): void => {
    const peer = call.getPeer();
    // A unix socket peer has no address: each call is its own "connection" there (the total cap still holds).
    const connection = peer === 'unknown' ? {} : peer;
    const sink: WatchSink = {
      write: (s) => call.write({ status: s }),
      // grpc-js turns an 'error' on a server stream into the call's status.
      end: () => call.emit('error', { code: status.UNAVAILABLE, details: SHUTTING_DOWN }),
    };
    const client = peer === 'unknown' ? undefined : peerKey(addressOf(peer));
    const watcher = watch.open(call.request.service ?? '', connection, sink, client);
    if (watcher === undefined) {
      call.emit('error', { code: status.RESOURCE_EXHAUSTED, details: TOO_MANY });
      return;
    }
    call.on('drain', () => watcher.drained());
    call.once('cancelled', () => watcher.close());
    call.once('close', () => watcher.close());
  };
}

/**
 * `grpc.health.v1.Health/Watch` on sluice's h2 server, once the request (`service`) has arrived: response
 * headers, then one message per status; at shutdown, trailers with UNAVAILABLE. `refuse` answers a
 * Trailers-Only RESOURCE_EXHAUSTED when a cap is reached.
 */
export function serveH2Watch(
  stream: ServerHttp2Stream,
  service: string,
  watch: HealthWatch,
  refuse: (message: string) => void,
): void {
  if (!isAnswerable(stream)) return;
  let ending = false;
  const sink: WatchSink = {
    write: (s) => (isAnswerable(stream) ? stream.write(encodeHealthResponseFrame(s)) : true),
    end() {
      if (ending || !isAnswerable(stream)) return;
      ending = true;
      stream.end();
    },
  };
  const address = stream.session?.socket?.remoteAddress;
  const watcher = watch.open(service, stream.session, sink, address === undefined ? undefined : peerKey(address));
  if (watcher === undefined) {
    refuse(TOO_MANY);
    return;
  }
  stream.once('close', () => watcher.close());
  try {
    stream.respond({ ':status': 200, 'content-type': 'application/grpc' }, { waitForTrailers: true });
    stream.once('wantTrailers', () => {
      try {
        if (isAnswerable(stream)) {
          stream.sendTrailers({ 'grpc-status': String(status.UNAVAILABLE), 'grpc-message': SHUTTING_DOWN });
        }
      } catch {
        // The client left meanwhile.
      }
    });
    stream.on('drain', () => watcher.drained());
  } catch {
    watcher.close();
    if (!stream.destroyed) stream.destroy();
  }
}
