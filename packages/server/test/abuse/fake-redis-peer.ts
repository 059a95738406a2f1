/**
 * A TCP server at a peer region's URL that speaks just enough RESP to be taken for a Redis — it parses
 * the commands it is sent and answers CLIENT, INFO (the client's ready check) and PING as a Redis would — and
 * answers everything else as the test says: with huge replies (a reply bomb), or with well-formed
 * replies of the wrong shape. For the multi-region abuse tests.
 */
import assert from 'node:assert/strict';
import { createServer, type Server, type Socket } from 'node:net';

/** How the fake answers a command: the bytes to write, or 'huge' for a `size`-byte bulk string. */
export type FakeAnswer = Buffer | string | 'huge';

export interface FakePeerOptions {
  /** The answer to scripts (EVALSHA, EVAL) and any other command but CLIENT, INFO and PING. */
  readonly answer: FakeAnswer;
  /** Answer every command with it, the client's first ones too: the first reply is already bad. */
  readonly fromTheStart?: boolean;
  /** Size of a huge reply. @default 50 MB */
  readonly size?: number;
}

export interface FakePeer {
  readonly server: Server;
  readonly url: string;
  /** Commands answered so far, by name. */
  readonly seen: Map<string, number>;
  close(): Promise<void>;
}

const INFO = '# Server\r\nredis_version:7.2.0\r\nredis_mode:standalone\r\n# Persistence\r\nloading:0\r\n';

/** Parses complete RESP commands (arrays of bulk strings) off the front of `buf`. */
function commands(buf: Buffer): { names: string[]; rest: Buffer } {
  const names: string[] = [];
  let at = 0;
  for (;;) {
    const start = at;
    const line = (from: number) => {
      const end = buf.indexOf('\r\n', from);
      return end < 0 ? undefined : { text: buf.toString('latin1', from, end), next: end + 2 };
    };
    const head = line(at);
    if (head === undefined || !head.text.startsWith('*')) return { names, rest: buf.subarray(start) };
    const n = Number(head.text.slice(1));
    at = head.next;
    let name: string | undefined;
    for (let i = 0; i < n; i++) {
      const len = line(at);
      if (len === undefined) return { names, rest: buf.subarray(start) };
      const size = Number(len.text.slice(1));
      if (buf.length < len.next + size + 2) return { names, rest: buf.subarray(start) };
      if (i === 0) name = buf.toString('latin1', len.next, len.next + size).toUpperCase();
      at = len.next + size + 2;
    }
    names.push(name ?? '');
  }
}

/** Starts the fake on a free loopback port. */
export async function startFakePeer(options: FakePeerOptions): Promise<FakePeer> {
  const size = options.size ?? 50 * 1024 * 1024;
  // One buffer for every huge reply (the sockets' write queues share it).
  const huge = options.answer === 'huge' ? Buffer.alloc(size, 'x') : undefined;
  const seen = new Map<string, number>();
  const sockets = new Set<Socket>();
  const server = createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => {});
    let pending: Buffer = Buffer.alloc(0);
    socket.on('data', (chunk: Buffer) => {
      const parsed = commands(Buffer.concat([pending, chunk]));
      pending = parsed.rest;
      for (const name of parsed.names) {
        seen.set(name, (seen.get(name) ?? 0) + 1);
        if (socket.destroyed) return;
        if (name === 'PING' && !options.fromTheStart) socket.write('+PONG\r\n');
        // ioredis names itself (CLIENT SETINFO) before its ready check.
        else if (name === 'CLIENT' && !options.fromTheStart) socket.write('+OK\r\n');
        else if (name === 'INFO' && !options.fromTheStart) socket.write(`$${INFO.length}\r\n${INFO}\r\n`);
        else if (huge !== undefined) {
          socket.write(`$${size}\r\n`);
          socket.write(huge);
          socket.write('\r\n');
        } else socket.write(options.answer as Buffer | string);
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  assert.ok(address !== null && typeof address === 'object');
  return {
    server,
    url: `redis://127.0.0.1:${address.port}`,
    seen,
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
