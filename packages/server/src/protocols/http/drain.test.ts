import assert from 'node:assert/strict';
import { Agent, createServer, get, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, it } from 'node:test';
import { createDrain } from './drain.js';

/** A server whose requests wait until the test answers them by path. */
function holdingServer(): {
  server: Server;
  held: Map<string, ServerResponse>;
  arrived: (path: string) => Promise<void>;
} {
  const held = new Map<string, ServerResponse>();
  const waiters = new Map<string, () => void>();
  const server = createServer((req, res) => {
    held.set(req.url ?? '', res);
    waiters.get(req.url ?? '')?.();
  });
  const arrived = (path: string) =>
    held.has(path) ? Promise.resolve() : new Promise<void>((resolve) => waiters.set(path, resolve));
  return { server, held, arrived };
}

function request(port: number, path: string, agent: Agent): Promise<IncomingMessage> {
  return new Promise((resolve, reject) => {
    get({ host: '127.0.0.1', port, path, agent }, (res) => {
      res.resume();
      resolve(res);
    }).on('error', reject);
  });
}

describe('createDrain', () => {
  let server: Server | undefined;
  const agent = new Agent({ keepAlive: true });
  /** A holding server with a drain, listening. */
  async function listening() {
    const s = holdingServer();
    server = s.server;
    const drain = createDrain(s.server);
    await new Promise<void>((resolve) => s.server.listen(0, '127.0.0.1', resolve));
    return { s, drain, port: (s.server.address() as AddressInfo).port };
  }
  afterEach(async () => {
    agent.destroy();
    server?.closeAllConnections();
    await new Promise((resolve) => server?.close(resolve));
  });

  it('closes the connection of every answer not yet started, and of every request after start()', async () => {
    const { s, drain, port } = await listening();
    const answers = ['/a', '/b', '/c', '/d'].map((path) => request(port, path, agent));
    await Promise.all(['/a', '/b', '/c', '/d'].map((path) => s.arrived(path)));
    // Answered before the drain, from the head, the middle and the tail of the list: kept alive.
    for (const path of ['/d', '/b', '/a']) s.held.get(path)?.end('ok');
    s.held.get('/c')?.writeHead(200);
    drain.start();
    s.held.get('/c')?.end('ok');
    const [a, b, c, d] = await Promise.all(answers);
    assert.equal(a?.headers.connection, 'keep-alive');
    assert.equal(b?.headers.connection, 'keep-alive');
    assert.equal(d?.headers.connection, 'keep-alive');
    assert.equal(c?.headers.connection, 'keep-alive', 'its headers were sent before the drain');
    const late = request(port, '/e', agent);
    await s.arrived('/e');
    s.held.get('/e')?.end('ok');
    assert.equal((await late).headers.connection, 'close');
  });

  it('finds the unanswered responses after others left the list from any place', async () => {
    const { s, drain, port } = await listening();
    const paths = ['/1', '/2', '/3', '/4', '/5', '/6'];
    const answers = paths.map((path) => request(port, path, agent));
    await Promise.all(paths.map((path) => s.arrived(path)));
    // Leave from the newest end, the middle and the oldest end; /2 and /4 stay in flight.
    const done = ['/6', '/3', '/1', '/5'];
    for (const path of done) s.held.get(path)?.end('ok');
    await Promise.all(done.map((path) => answers[paths.indexOf(path)]));
    drain.start();
    for (const path of ['/2', '/4']) s.held.get(path)?.end('ok');
    const all = await Promise.all(answers);
    assert.deepEqual(
      all.map((res) => res.headers.connection),
      ['keep-alive', 'close', 'keep-alive', 'close', 'keep-alive', 'keep-alive'],
    );
  });
});
