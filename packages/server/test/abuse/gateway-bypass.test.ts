/**
 * Ways past the gateway's decision (issue 37, items 3, 5 and 9), against the real `sluice serve --upstream`
 * in front of an Express upstream: a raw `#` in the request target, an `h2c` upgrade that would turn the
 * connection into a tunnel no request on it is decided for, and a websocket tunnel that kept SIGTERM from
 * ever finishing.
 */
import assert from 'node:assert/strict';
import { request as httpRequest, type Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { connect } from 'node:net';
import { after, before, describe, it } from 'node:test';
import express from 'express';
import { type SluiceProcess, startSluice, tempFile } from '../integration/helpers.js';

const RULES = `domain: gw
descriptors:
  - key: remote_address
    descriptors:
      - key: path
        value: /login
        rate_limit: { name: login, unit: minute, requests_per_unit: 5 }
http:
  rate_limits:
    - actions:
        - remote_address: {}
        - path: {}
`;

/** An Express upstream (case-insensitive routing, as Express's default) that answers websocket and h2c switches. */
async function startUpstream(): Promise<{ server: Server; logins: () => number; tunnels: Set<Socket> }> {
  let logins = 0;
  const tunnels = new Set<Socket>();
  const app = express();
  app.get('/login', (_req, res) => {
    logins++;
    res.send('login page');
  });
  const server = app.listen(0, '127.0.0.1');
  server.on('upgrade', (req, socket: Socket) => {
    tunnels.add(socket);
    socket.once('close', () => tunnels.delete(socket));
    socket.write(`HTTP/1.1 101 Switching Protocols\r\nupgrade: ${req.headers.upgrade}\r\nconnection: Upgrade\r\n\r\n`);
    // After the switch, count every GET /login the tunnel carries as the upstream serving it.
    socket.on('data', (chunk: Buffer) => {
      logins += chunk.toString('latin1').split('GET /login').length - 1;
    });
  });
  await new Promise<void>((resolve) => server.once('listening', resolve));
  return { server, logins: () => logins, tunnels };
}

async function stopUpstream({ server, tunnels }: { server: Server; tunnels: Set<Socket> }): Promise<void> {
  // Upgraded sockets are no longer the HTTP server's to close.
  for (const socket of tunnels) socket.destroy();
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
}

/** Writes `text` on a new connection to the gateway and collects what comes back until it closes or `ms` pass. */
function exchange(port: number, text: string, ms = 3000): Promise<string> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    let got = '';
    const done = () => {
      clearTimeout(timer);
      socket.destroy();
      resolve(got);
    };
    const timer = setTimeout(done, ms);
    socket.on('data', (chunk) => {
      got += chunk.toString('latin1');
    });
    socket.on('close', done);
    socket.on('error', done);
    socket.write(text);
  });
}

/** GET `path` exactly as written; resolves with the status. */
function rawGet(port: number, path: string, client: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port, path, headers: { 'x-forwarded-for': client }, agent: false });
    req.on('response', (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on('error', reject);
    req.end();
  });
}

describe('gateway: no way past the decision', () => {
  let upstream: Awaited<ReturnType<typeof startUpstream>>;
  let sluice: SluiceProcess;
  let config: ReturnType<typeof tempFile>;

  before(async () => {
    upstream = await startUpstream();
    config = tempFile('gw.yaml', RULES);
    sluice = await startSluice([
      '--config',
      config.path,
      '--no-watch',
      '--upstream',
      `http://127.0.0.1:${(upstream.server.address() as AddressInfo).port}`,
      '--trust-proxy',
      'loopback',
      '--shutdown-grace',
      '1s',
    ]);
  });
  after(async () => {
    await sluice?.stop();
    if (upstream) await stopUpstream(upstream);
    config?.remove();
  });

  it('a raw # in the target is refused with 400, so /login#x never reaches the upstream as /login', async () => {
    const before = upstream.logins();
    const statuses: number[] = [];
    for (let i = 0; i < 10; i++) statuses.push(await rawGet(sluice.proxy as number, '/login#x', '198.51.100.1'));
    for (let i = 0; i < 10; i++) statuses.push(await rawGet(sluice.proxy as number, '/LOGIN#', '198.51.100.1'));
    for (let i = 0; i < 10; i++) statuses.push(await rawGet(sluice.proxy as number, '/login?a=1#x', '198.51.100.1'));
    assert.deepEqual(new Set(statuses), new Set([400]));
    assert.equal(upstream.logins(), before, 'no request with a fragment was served');
    const raw = await exchange(sluice.proxy as number, 'GET /login#x HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n');
    assert.match(raw, /^HTTP\/1\.1 400/);
    assert.match(raw, /ERR_SLUICE_BAD_PATH/);
    // The limit itself still holds for the same client: 5 served, then 429.
    const plain: number[] = [];
    for (let i = 0; i < 7; i++) plain.push(await rawGet(sluice.proxy as number, '/login', '198.51.100.1'));
    assert.deepEqual(plain, [200, 200, 200, 200, 200, 429, 429]);
  });

  it('an h2c upgrade is refused: no tunnel, and no login past the limit', async () => {
    const client = '198.51.100.2';
    for (let i = 0; i < 5; i++) assert.equal(await rawGet(sluice.proxy as number, '/login', client), 200);
    const before = upstream.logins();
    const logins = Array.from({ length: 30 }, () => 'GET /login HTTP/1.1\r\nHost: a\r\n\r\n').join('');
    const answer = await exchange(
      sluice.proxy as number,
      `GET /probe HTTP/1.1\r\nHost: a\r\nX-Forwarded-For: ${client}\r\nConnection: Upgrade, HTTP2-Settings\r\n` +
        `Upgrade: h2c\r\nHTTP2-Settings: AAMAAABkAAQCAAAAAAIAAAAA\r\n\r\n${logins}`,
    );
    assert.match(answer, /^HTTP\/1\.1 400/);
    assert.match(answer, /ERR_SLUICE_UPGRADE_REFUSED/);
    assert.doesNotMatch(answer, /101 Switching/);
    assert.equal(upstream.logins(), before, 'the upstream served no login through a tunnel');
    // The same client is still limited, and others are still served.
    assert.equal(await rawGet(sluice.proxy as number, '/login', client), 429);
    assert.equal(await rawGet(sluice.proxy as number, '/login', '198.51.100.3'), 200);
  });

  it('a websocket upgrade is still tunnelled', async () => {
    const answer = await exchange(
      sluice.proxy as number,
      'GET /chat HTTP/1.1\r\nHost: a\r\nX-Forwarded-For: 198.51.100.4\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n' +
        'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n',
      1000,
    );
    assert.match(answer, /^HTTP\/1\.1 101/);
  });
});

describe('gateway: SIGTERM with websocket tunnels', () => {
  for (const tunnel of ['open', 'closed by the client'] as const)
    it(`exits within the grace period with a tunnel ${tunnel}`, async () => {
      const upstream = await startUpstream();
      const config = tempFile('gw.yaml', RULES);
      const sluice = await startSluice([
        '--config',
        config.path,
        '--no-watch',
        '--upstream',
        `http://127.0.0.1:${(upstream.server.address() as AddressInfo).port}`,
        '--shutdown-grace',
        '1s',
      ]);
      try {
        const socket = connect(sluice.proxy as number, '127.0.0.1');
        const switched = new Promise<void>((resolve) => socket.once('data', () => resolve()));
        socket.on('error', () => {});
        socket.write(
          'GET /chat HTTP/1.1\r\nHost: a\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n' +
            'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n',
        );
        await switched;
        if (tunnel === 'closed by the client') {
          socket.destroy();
          await new Promise((resolve) => setImmediate(resolve));
        }
        const started = performance.now();
        // stop() sends SIGTERM and SIGKILLs after 10 s: a clean exit means the service finished by itself.
        const exit = await sluice.stop();
        const ms = performance.now() - started;
        socket.destroy();
        assert.equal(exit.signal, null, `the service had to be killed after ${Math.round(ms)} ms`);
        assert.equal(exit.code, 0);
        assert.ok(ms < 8000, `the exit took ${Math.round(ms)} ms with a 1 s grace`);
      } finally {
        await sluice.stop();
        await stopUpstream(upstream);
        config.remove();
      }
    });
});
