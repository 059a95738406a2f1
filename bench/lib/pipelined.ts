/**
 * A script's ceiling, the way `redis-benchmark -c 50 -P 16` measures one: many connections, each
 * with a fixed number of calls in flight, every call encoded beforehand, replies only counted — so
 * Redis, not the client, is what runs out. Written here because redis-benchmark cannot send a binary
 * argument (it cuts `-x` input at the first NUL), and the store's scripts take their policies packed.
 */
import { connect, type Socket } from 'node:net';

/** One command in RESP, from its arguments. */
function encode(args: readonly (string | Buffer)[]): Buffer {
  const parts: Buffer[] = [Buffer.from(`*${args.length}\r\n`)];
  for (const a of args) {
    const b = typeof a === 'string' ? Buffer.from(a) : a;
    parts.push(Buffer.from(`$${b.length}\r\n`), b, Buffer.from('\r\n'));
  }
  return Buffer.concat(parts);
}

/**
 * Calls per second Redis answered: `connections` sockets, each sending `pipeline` calls at a time
 * (made by `command(i)` for i in 0…variety-1, round robin) and the next `pipeline` once all came back,
 * until `total` calls were answered. Replies must be arrays (each starts with '*', which no integer
 * in them contains); any other reply fails the run.
 */
export async function pipelinedRate(
  port: number,
  command: (i: number) => readonly (string | Buffer)[],
  { connections = 50, pipeline = 16, total = 400_000, variety = 1000 } = {},
): Promise<number> {
  const encoded = Array.from({ length: variety }, (_, i) => encode(command(i)));
  const batches = Array.from({ length: variety }, (_, i) =>
    Buffer.concat(Array.from({ length: pipeline }, (_, j) => encoded[(i * pipeline + j) % variety] as Buffer)),
  );
  let sent = 0;
  let answered = 0;
  const start = performance.now();
  await Promise.all(
    Array.from({ length: connections }, (_, c) => {
      return new Promise<void>((resolve, reject) => {
        const socket: Socket = connect(port, '127.0.0.1');
        let owed = 0;
        let next = c;
        const send = () => {
          if (sent >= total) {
            socket.end();
            resolve();
            return;
          }
          sent += pipeline;
          owed = pipeline;
          socket.write(batches[next++ % variety] as Buffer);
        };
        socket.on('connect', send);
        socket.on('error', reject);
        socket.on('data', (chunk: Buffer) => {
          if (chunk[0] === 0x2d /* '-' */) reject(new Error(`redis answered: ${chunk.toString().split('\r\n')[0]}`));
          let at = chunk.indexOf(0x2a /* '*' */);
          while (at !== -1) {
            owed--;
            answered++;
            at = chunk.indexOf(0x2a, at + 1);
          }
          if (owed === 0) send();
        });
      });
    }),
  );
  return (answered / (performance.now() - start)) * 1000;
}
