/**
 * A second connection to this region's Redis for the sync loop, opened on first use and closed with the store or
 * when the caller ends the client it was copied from.
 */
import { createTransport, type RedisClientLike, type RedisTransport } from '../redis/client.js';
import type { Duplicable, Duplicate } from './options.js';

/**
 * A second connection like `client`'s, opened when the sync loop first sends (a store that never
 * syncs opens none), closed by `close()` — or when the caller ends `client` itself (ioredis' 'end'),
 * so a store the caller never closed does not keep a process alive with it.
 */
export function lazyDuplicate(
  client: RedisClientLike & Duplicable,
  cluster: boolean,
): { transport: RedisTransport; close(): void } {
  let copy: Duplicate | undefined;
  let inner: RedisTransport | undefined;
  /**
   * Until the copy's first connection is up. A client made without an offline queue (as the service
   * makes them) fails a command sent before that at once: the first sync would fail and report the
   * region's Redis unreachable, while it only had to wait for the connection it just opened.
   */
  let connecting: Promise<void> | undefined;
  let closed = false;
  const close = () => {
    closed = true;
    client.off?.('end', close);
    copy?.disconnect();
  };
  const open = (): RedisTransport => {
    if (inner === undefined) {
      const opened = client.duplicate();
      copy = opened;
      inner = createTransport(opened);
      // A copy of a client made with lazyConnect (as the service makes them) waits for a command to
      // connect, and one without an offline queue fails that command: connect it now.
      if (opened.status === 'wait') opened.connect?.().catch(() => {});
      if (!inner.connected() && opened.once !== undefined) {
        connecting = new Promise((resolve) => {
          const done = () => {
            connecting = undefined;
            resolve();
          };
          opened.once?.('ready', done);
          // The first attempt failed, or the copy was closed: from then on commands go to the
          // transport, which fails them at once while it is down (nothing piles up here).
          opened.once?.('error', done);
          opened.once?.('end', done);
        });
      }
      if (closed) opened.disconnect();
      else client.once?.('end', close);
    }
    return inner;
  };
  /** Sends through the copy, once its first connection is up. */
  const whenOpen = <T>(send: (t: RedisTransport) => Promise<T>): Promise<T> => {
    const t = open();
    return connecting === undefined ? send(t) : connecting.then(() => send(t));
  };
  return {
    transport: {
      send: (args, firstKey) => whenOpen((t) => t.send(args, firstKey)),
      sendToAll: (args) => whenOpen((t) => t.sendToAll(args)),
      // Before it is opened, as ready as the decisions' connection: the first command opens it.
      ready: () => (inner === undefined ? !closed : inner.ready()),
      connected: () => (inner === undefined ? !closed : inner.connected()),
      cluster,
    },
    close,
  };
}
