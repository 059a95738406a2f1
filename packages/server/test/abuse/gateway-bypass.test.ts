/**
 * Ways past the gateway's decision (issue 37, items 3, 5 and 9), against the real `sluice serve --upstream`
 * in front of an Express upstream: a raw `#` in the request target (and other spellings the rules and the
 * upstream could read apart), a query the rules never saw, an `h2c` upgrade that would turn the connection
 * into a tunnel no request on it is decided for, and websocket tunnels that kept SIGTERM from ever finishing.
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
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
  - key: api_key
    rate_limit: { name: per-key, unit: minute, requests_per_unit: 5 }
http:
  rate_limits:
    - actions:
        - remote_address: {}
        - path: {}
    - actions:
        - query_parameters: { query_parameter_name: api_key, descriptor_key: api_key }
`;

/**
 * An Express upstream (case-insensitive routing, as Express's default, path parameters dropped as Java
 * servers do) that answers websocket and h2c switches.
 */
async function startUpstream(): Promise<{
  server: Server;
  logins: () => number;
  searches: () => number;
  tunnels: Set<Socket>;
}> {
  let logins = 0;
  let searches = 0;
  const tunnels = new Set<Socket>();
  const app = express();
  // Path parameters dropped and the dot segments they hid resolved, as Tomcat, Jetty and Spring do:
  // `/login;x` and `/x/..;/login` are served as `/login`.
  app.use((req, _res, next) => {
    if (req.url.includes(';')) {
      const url = new URL(req.url.replace(/;[^/?]*/g, ''), 'http://upstream');
      req.url = url.pathname + url.search;
    }
    next();
  });
  app.get('/login', (_req, res) => {
    logins++;
    res.send('login page');
  });
  app.get('/search', (_req, res) => {
    searches++;
    res.send('results');
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
  return { server, logins: () => logins, searches: () => searches, tunnels };
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
    const proxy = sluice.proxy as number;
    const before = upstream.logins();
    const statuses: number[] = [];
    for (let i = 0; i < 10; i++) statuses.push(await rawGet(proxy, '/login#x', '198.51.100.1'));
    for (let i = 0; i < 10; i++) statuses.push(await rawGet(proxy, '/LOGIN#', '198.51.100.1'));
    for (let i = 0; i < 10; i++) statuses.push(await rawGet(proxy, '/login?a=1#x', '198.51.100.1'));
    assert.deepEqual(new Set(statuses), new Set([400]));
    assert.equal(upstream.logins(), before, 'no request with a fragment was served');
    const raw = await exchange(proxy, 'GET /login#x HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n');
    assert.match(raw, /^HTTP\/1\.1 400/);
    assert.match(raw, /ERR_SLUICE_BAD_PATH/);
    // The limit itself still holds for the same client: 5 served, then 429.
    const plain: number[] = [];
    for (let i = 0; i < 7; i++) plain.push(await rawGet(proxy, '/login', '198.51.100.1'));
    assert.deepEqual(plain, [200, 200, 200, 200, 200, 429, 429]);
  });

  it('no other spelling of /login gets past its limit: each is refused or counted as /login', async () => {
    const proxy = sluice.proxy as number;
    // Targets the rules and an upstream could read apart; Express serves most of them as /login.
    const spellings = [
      'http://a/login', // absolute-form: Express routes on its path
      '/LOGIN',
      '/Login/#frag',
      '/login/',
      '//login',
      '/./login',
      '/x/../login',
      '/%6Cogin',
      '/login%23x', // an escaped `#` is no fragment: a path of its own, for both
      '/login?#',
      '/login??a',
      '/login;jsessionid=1', // path parameters, dropped by this upstream
      '/LOGIN;x/',
      '/x/..;/login',
    ];
    for (const [n, path] of spellings.entries()) {
      const client = `198.51.100.${100 + n}`;
      const before = upstream.logins();
      const statuses: number[] = [];
      for (let i = 0; i < 8; i++) statuses.push(await rawGet(proxy, path, client));
      const served = upstream.logins() - before;
      assert.ok(served <= 5, `${path}: the upstream served /login ${served} times to one client (limit 5)`);
      for (const status of statuses) assert.ok([200, 400, 404, 429].includes(status), `${path}: ${status}`);
    }
  });

  it('a query_parameters rule sees the query the upstream gets', async () => {
    const proxy = sluice.proxy as number;
    const before = upstream.searches();
    const statuses: number[] = [];
    for (let i = 0; i < 8; i++) statuses.push(await rawGet(proxy, `/search?q=${i}&api_key=k1`, '198.51.100.20'));
    assert.deepEqual(statuses, [200, 200, 200, 200, 200, 429, 429, 429]);
    assert.equal(upstream.searches() - before, 5);
  });

  it('an h2c upgrade is refused: no tunnel, and no login past the limit', async () => {
    const proxy = sluice.proxy as number;
    const client = '198.51.100.2';
    for (let i = 0; i < 5; i++) assert.equal(await rawGet(proxy, '/login', client), 200);
    const before = upstream.logins();
    const logins = Array.from({ length: 30 }, () => 'GET /login HTTP/1.1\r\nHost: a\r\n\r\n').join('');
    for (const upgrade of ['h2c', 'H2C', 'websocket, h2c', 'h2c, websocket']) {
      const answer = await exchange(
        proxy,
        `GET /probe HTTP/1.1\r\nHost: a\r\nX-Forwarded-For: ${client}\r\nConnection: Upgrade, HTTP2-Settings\r\n` +
          `Upgrade: ${upgrade}\r\nHTTP2-Settings: AAMAAABkAAQCAAAAAAIAAAAA\r\n\r\n${logins}`,
      );
      assert.match(answer, /^HTTP\/1\.1 400/, `Upgrade: ${upgrade}`);
      assert.match(answer, /ERR_SLUICE_UPGRADE_REFUSED/);
      assert.doesNotMatch(answer, /101 Switching/);
    }
    assert.equal(upstream.logins(), before, 'the upstream served no login through a tunnel');
    // The same client is still limited, and others are still served.
    assert.equal(await rawGet(proxy, '/login', client), 429);
    assert.equal(await rawGet(proxy, '/login', '198.51.100.3'), 200);
    // A websocket upgrade is still tunnelled.
    const websocket = await exchange(
      proxy,
      'GET /chat HTTP/1.1\r\nHost: a\r\nX-Forwarded-For: 198.51.100.4\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n' +
        'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n',
      1000,
    );
    assert.match(websocket, /^HTTP\/1\.1 101/);
  });
});

describe('gateway: SIGTERM with websocket tunnels', () => {
  // An open tunnel is cut at the grace deadline (1 s here); one its client has left holds nothing, so the
  // service exits long before a grace of 8 s. stop() SIGKILLs after 10 s: a clean exit is the service's own.
  const cases = [
    { tunnel: 'open', grace: '1s', boundMs: 6000 },
    { tunnel: 'ended by the client (FIN)', grace: '8s', boundMs: 4000 },
    { tunnel: 'destroyed by the client', grace: '8s', boundMs: 4000 },
  ] as const;
  for (const { tunnel, grace, boundMs } of cases)
    it(`exits in time with a tunnel ${tunnel} (grace ${grace})`, async () => {
      const upstream = await startUpstream();
      const config = tempFile('gw.yaml', RULES);
      const sluice = await startSluice([
        '--config',
        config.path,
        '--no-watch',
        '--upstream',
        `http://127.0.0.1:${(upstream.server.address() as AddressInfo).port}`,
        '--shutdown-grace',
        grace,
      ]);
      const socket = connect(sluice.proxy as number, '127.0.0.1');
      socket.on('error', () => {});
      try {
        const switched = new Promise<string>((resolve, reject) => {
          socket.once('data', (chunk: Buffer) => resolve(chunk.toString('latin1')));
          socket.once('close', () => reject(new Error('the gateway closed the connection instead of switching')));
        });
        socket.write(
          'GET /chat HTTP/1.1\r\nHost: a\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n' +
            'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n',
        );
        assert.match(await switched, /^HTTP\/1\.1 101/);
        if (tunnel !== 'open') {
          const [upstreamSide] = upstream.tunnels;
          assert.ok(upstreamSide, 'the upstream holds the tunnel');
          const passedOn = once(upstreamSide, 'end');
          if (tunnel === 'ended by the client (FIN)') socket.end();
          else socket.destroy();
          // The gateway has seen the client's FIN when it passes it on.
          await passedOn;
        }
        const started = performance.now();
        const exit = await sluice.stop();
        const ms = performance.now() - started;
        assert.equal(exit.signal, null, `the service had to be killed after ${Math.round(ms)} ms`);
        assert.equal(exit.code, 0);
        assert.ok(ms < boundMs, `the exit took ${Math.round(ms)} ms with a grace of ${grace}`);
      } finally {
        socket.destroy();
        await sluice.stop();
        await stopUpstream(upstream);
        config.remove();
      }
    });
});
