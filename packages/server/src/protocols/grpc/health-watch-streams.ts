/** `grpc.health.v1.Health/Watch` on grpc-js: each call opened in the Watch hub under the per-client bounds. */
import { type ServerWritableStream, status } from '@grpc/grpc-js';
import { peerKey } from '../http/peer-key.js';
import type { HealthWatch, WatchSink } from './health-watch.js';

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
