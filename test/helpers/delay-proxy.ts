/**
 * A TCP proxy on loopback that delays every byte by `delayMs` in each direction — a wide-area link
 * between two data centres, on one machine — and can cut the link (a partition) and restore it.
 *
 * Cut means a black hole, as a real partition is: connections stay open and bytes sent into them
 * vanish, so a client waits for its own timeout rather than being told at once. Healing closes those
 * connections, so clients reconnect (ioredis then re-sends the commands it never had answers to:
 * replays, which the multi-region merges must absorb).
 */
import { createServer, type Server, Socket } from 'node:net';

/** A running delay proxy. */
export interface DelayProxy {
  /** Loopback port to connect to instead of the target's. */
  readonly port: number;
  /** Drops every byte from now on (both directions), connections left open. */
  cut(): void;
  /** Ends the partition: closes the black-holed connections; new ones go through again. */
  heal(): void;
  /** Bytes forwarded so far (both directions). */
  readonly forwarded: number;
  close(): Promise<void>;
}

/** Starts a proxy to `127.0.0.1:targetPort` delaying each direction by `delayMs`. */
export async function startDelayProxy(targetPort: number, delayMs: number): Promise<DelayProxy> {
  const sockets = new Set<Socket>();
  let cut = false;
  let forwarded = 0;

  /** Forwards `from` → `to` after the delay, in order (timers of one delay fire in the order set). */
  function pipe(from: Socket, to: Socket): void {
    from.on('data', (chunk) => {
      if (cut) return;
      setTimeout(() => {
        if (cut || to.destroyed) return;
        forwarded += chunk.length;
        to.write(chunk);
      }, delayMs);
    });
    const end = () => setTimeout(() => to.destroy(), delayMs);
    from.on('end', end);
    from.on('close', end);
    from.on('error', () => from.destroy());
  }

  const server: Server = createServer((client) => {
    const upstream = new Socket();
    sockets.add(client);
    sockets.add(upstream);
    client.on('close', () => sockets.delete(client));
    upstream.on('close', () => sockets.delete(upstream));
    upstream.connect(targetPort, '127.0.0.1');
    pipe(client, upstream);
    pipe(upstream, client);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  const port = typeof address === 'object' && address !== null ? address.port : 0;

  return {
    port,
    get forwarded() {
      return forwarded;
    },
    cut() {
      cut = true;
    },
    heal() {
      for (const s of sockets) s.destroy();
      sockets.clear();
      cut = false;
    },
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
