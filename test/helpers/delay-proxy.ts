/**
 * A TCP proxy on loopback that delays every byte by `delayMs` in each direction — a wide-area link
 * between two data centres, on one machine — and can cut the link (a partition) and restore it.
 *
 * Cut means a black hole, as a real partition is: connections stay open and bytes sent into them
 * vanish, so a client waits for its own timeout rather than being told at once. Healing closes those
 * connections, so clients reconnect (ioredis then re-sends the commands it never had answers to:
 * replays, which the multi-region merges must absorb).
 */
import { type ChildProcess, fork } from 'node:child_process';
import { createServer, type Server, Socket } from 'node:net';
import { fileURLToPath } from 'node:url';

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

/**
 * The same proxies in a child process of their own (benchmarks): a wide-area link is not in the
 * application's process, and forwarding bytes on its event loop would delay the very decisions being
 * measured. One child serves every proxy asked of it; `cut`/`heal` reach it by message.
 */
export interface DelayProxyProcess {
  /** Starts a proxy in the child; resolves once it listens. */
  start(targetPort: number, delayMs: number): Promise<Omit<DelayProxy, 'forwarded' | 'close'>>;
  /** Stops every proxy and the child. */
  close(): Promise<void>;
}

type ToChild = { op: 'start'; id: number; targetPort: number; delayMs: number } | { op: 'cut' | 'heal'; id: number };

/** Starts the child (this module run with `--child`, under the parent's loader flags). */
export async function startDelayProxyProcess(): Promise<DelayProxyProcess> {
  const child: ChildProcess = fork(fileURLToPath(import.meta.url), ['--child'], {
    execArgv: process.execArgv,
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const waiting = new Map<number, (port: number) => void>();
  child.on('message', (m: { id: number; port: number }) => {
    waiting.get(m.id)?.(m.port);
    waiting.delete(m.id);
  });
  let ids = 0;
  const send = (m: ToChild) => child.send(m);
  return {
    async start(targetPort, delayMs) {
      const id = ++ids;
      const port = await new Promise<number>((resolve, reject) => {
        waiting.set(id, resolve);
        child.once('exit', () => reject(new Error('delay proxy process exited')));
        send({ op: 'start', id, targetPort, delayMs });
      });
      return { port, cut: () => send({ op: 'cut', id }), heal: () => send({ op: 'heal', id }) };
    },
    async close() {
      if (child.exitCode !== null) return;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill();
      await exited;
    },
  };
}

if (process.argv[2] === '--child' && process.argv[1] === fileURLToPath(import.meta.url) && process.send) {
  const proxies = new Map<number, DelayProxy>();
  process.on('message', async (m: ToChild) => {
    if (m.op === 'start') {
      const proxy = await startDelayProxy(m.targetPort, m.delayMs);
      proxies.set(m.id, proxy);
      process.send?.({ id: m.id, port: proxy.port });
    } else proxies.get(m.id)?.[m.op]();
  });
  process.on('disconnect', () => process.exit(0));
}
