/** A TCP proxy on loopback in front of a local database that refuses connections until started: a late database. */
import { connect, createServer, type Server, type Socket } from 'node:net';

/** The proxy's port (refusing until `start`), its start and its stop. */
export interface LateProxy {
  readonly port: number;
  start(): Promise<void>;
  stop(): Promise<void>;
}

const listen = (server: Server, port: number) =>
  new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => resolve());
  });
const close = (server: Server) => new Promise<void>((resolve) => server.close(() => resolve()));

/**
 * A proxy to 127.0.0.1:`targetPort`. Its port is found free by listening once and closing, so until `start` a
 * connection to it is refused (ECONNREFUSED), as by a database not up yet.
 */
export async function createLateProxy(targetPort: number): Promise<LateProxy> {
  const sockets = new Set<Socket>();
  const server = createServer((client) => {
    const upstream = connect(targetPort, '127.0.0.1');
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
      s.on('error', () => {});
    }
    client.pipe(upstream).pipe(client);
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
  });
  const probe = createServer();
  await listen(probe, 0);
  const port = (probe.address() as { port: number }).port;
  await close(probe);
  return {
    port,
    start: () => listen(server, port),
    async stop() {
      for (const s of sockets) s.destroy();
      if (server.listening) await close(server);
    },
  };
}
