/**
 * Attacks on the gateway of the real `sluice serve --upstream` (issue 12, items 2, 6 and 10): one client
 * holding many slow uploads, a slow upstream, spellings of a limited path, forged forwarding headers,
 * websocket upgrades. Clients are told apart by `X-Forwarded-For` from a trusted proxy (loopback), so one
 * attacker and one well-behaved client can share the machine.
 */
import assert from 'node:assert/strict';
import { request as httpRequest, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { connect } from 'node:net';
import { after, before, describe, it } from 'node:test';
import express from 'express';
import { type SluiceProcess, startSluice, tempFile } from '../integration/helpers.js';
import { cpuSpent, MB, underAttack } from './harness.js';
import type { ProbeResult } from './probe.js';

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
const BOUNDS = { maxRssBytes: 400 * MB, maxMetricsBytes: 64 * 1024 };
const IN_FLIGHT = 8;

describe('gateway abuse', () => {
  let upstream: Server;
  let sluice: SluiceProcess;
  let config: ReturnType<typeof tempFile>;
  const headersSeen: IncomingHttpHeaders[] = [];
  const parked: (() => void)[] = [];
  // What the upstream saw at once, from the attacker: the in-flight cap is about these.
  let uploading = 0;
  let mostUploading = 0;
  let waiting = 0;
  let mostWaiting = 0;

  before(async () => {
    const app = express();
    app.get('/login', (_req, res) => {
      res.send('login page');
    });
    app.get('/probe', (_req, res) => {
      res.send('ok');
    });
    app.get('/headers', (req, res) => {
      headersSeen.push(req.headers);
      res.send('seen');
    });
    // Never answers on its own: a slow upstream.
    app.get('/slow', (req, res) => {
      waiting++;
      mostWaiting = Math.max(mostWaiting, waiting);
      req.once('close', () => waiting--);
      parked.push(() => res.end());
    });
    app.post('/upload', (req, res) => {
      uploading++;
      mostUploading = Math.max(mostUploading, uploading);
      req.once('close', () => uploading--);
      req.resume();
      req.on('end', () => res.send('stored'));
    });
    upstream = app.listen(0, '127.0.0.1');
    upstream.on('upgrade', (req, socket) => {
      socket.write(
        `HTTP/1.1 101 Switching Protocols\r\nupgrade: ${req.headers.upgrade}\r\nconnection: Upgrade\r\nx-upstream: yes\r\n\r\n`,
      );
      socket.pipe(socket); // echo
    });
    await new Promise<void>((resolve) => upstream.once('listening', resolve));
    config = tempFile('gw.yaml', RULES);
    sluice = await startSluice([
      '--config',
      config.path,
      '--no-watch',
      '--upstream',
      `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`,
      '--trust-proxy',
      'loopback',
      '--gateway-max-client-inflight',
      String(IN_FLIGHT),
      '--gateway-request-timeout',
      '3s',
      '--upstream-timeout',
      '2s',
    ]);
  });
  after(async () => {
    for (const release of parked) release();
    upstream?.closeAllConnections();
    await new Promise((resolve) => upstream?.close(resolve));
    await sluice?.stop();
    config?.remove();
  });

  const gateway = (path: string) => `http://127.0.0.1:${sluice.proxy}${path}`;
  const probe = async (): Promise<ProbeResult> => {
    const started = performance.now();
    try {
      const res = await fetch(gateway('/probe'), {
        headers: { 'x-forwarded-for': '198.51.100.200' },
        signal: AbortSignal.timeout(15_000),
      });
      await res.text();
      return { status: res.status, ms: performance.now() - started };
    } catch {
      return { status: 'error', ms: performance.now() - started };
    }
  };

  /** GET `path` exactly as written (no client-side URL clean-up); resolves with the status. */
  function rawGet(path: string, client: string): Promise<number> {
    return new Promise((resolve, reject) => {
      const req = httpRequest({
        host: '127.0.0.1',
        port: sluice.proxy,
        path,
        headers: { 'x-forwarded-for': client },
        agent: false,
      });
      req.on('response', (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      });
      req.on('error', reject);
      req.end();
    });
  }

  /** A raw request from `client` whose body trickles in one byte per 200 ms; resolves with the status (0 = cut). */
  function slowUpload(client: string, bytes: number): Promise<number> {
    return new Promise((resolve) => {
      const req = httpRequest(gateway('/upload'), {
        method: 'POST',
        headers: { 'x-forwarded-for': client, 'content-length': String(bytes) },
        agent: false,
      });
      let sent = 0;
      const timer = setInterval(() => {
        if (sent < bytes && !req.destroyed) {
          req.write('x');
          sent++;
        }
      }, 200);
      const done = (status: number) => {
        clearInterval(timer);
        req.destroy();
        resolve(status);
      };
      req.on('response', (res) => {
        res.resume();
        done(res.statusCode ?? 0);
      });
      req.on('error', () => done(0));
    });
  }

  it('one client with many slow uploads gets its in-flight cap, and slow ones are cut; others are served', async () => {
    const statuses = await underAttack(sluice, probe, 200, BOUNDS, () =>
      Promise.all(Array.from({ length: 40 }, () => slowUpload('198.51.100.1', 1000))),
    );
    // 429 past the client's cap; 408 (or the connection cut) for those let through, at the request timeout.
    assert.deepEqual(
      statuses.filter((s) => s !== 429 && s !== 408 && s !== 0),
      [],
      JSON.stringify(statuses),
    );
    assert.ok(statuses.includes(429), JSON.stringify(statuses));
    assert.ok(mostUploading <= IN_FLIGHT, `the upstream had ${mostUploading} of the client's uploads at once`);
  });

  it('a slow upstream answers 504 at the upstream timeout, and holds only the client cap', async () => {
    const answers = await underAttack(sluice, probe, 200, BOUNDS, () =>
      Promise.all(
        Array.from({ length: 20 }, () =>
          fetch(gateway('/slow'), { headers: { 'x-forwarded-for': '198.51.100.2' } }).then(async (res) => ({
            status: res.status,
            code: ((await res.json()) as { error?: { code?: string } }).error?.code,
          })),
        ),
      ),
    );
    const codes = new Set(answers.map((a) => `${a.status} ${a.code}`));
    assert.deepEqual(
      [...codes].sort(),
      ['429 ERR_SLUICE_TOO_MANY_IN_FLIGHT', '504 ERR_SLUICE_UPSTREAM_TIMEOUT'],
      JSON.stringify(answers),
    );
    assert.ok(mostWaiting <= IN_FLIGHT, `the upstream held ${mostWaiting} of the client's requests at once`);
  });

  it('every spelling of a limited path counts against its rule (case, trailing slash, slashes, dot segments, escapes)', async () => {
    const spellings = ['/login', '/LOGIN', '/Login', '/login/', '//login', '/a/../login', '/%6Cogin', '/./login'];
    const statuses: number[] = [];
    // Sent as written: fetch would resolve dot segments itself.
    for (const path of spellings) statuses.push(await rawGet(path, '198.51.100.3'));
    assert.deepEqual(statuses, [200, 200, 200, 200, 200, 429, 429, 429], spellings.join(' '));
    const bad = await fetch(gateway('/login%zz'), { headers: { 'x-forwarded-for': '198.51.100.3' } });
    assert.equal(bad.status, 400);
    assert.equal(((await bad.json()) as { error: { code: string } }).error.code, 'ERR_SLUICE_BAD_PATH');
  });

  it('keys IPv6 clients by their /56: addresses of one subscriber share a limit', async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 6; i++) {
      // 2001:db8:1:00xx::/56 is one subscriber's network
      const res = await fetch(gateway('/login'), { headers: { 'x-forwarded-for': `2001:db8:1:${i}::${i + 1}` } });
      await res.text();
      statuses.push(res.status);
    }
    assert.deepEqual(statuses, [200, 200, 200, 200, 200, 429]);
  });

  it('rebuilds the forwarding headers: a trusted proxy’s are extended, X-Real-IP is the resolved client', async () => {
    headersSeen.length = 0;
    const res = await fetch(gateway('/headers'), {
      headers: {
        'x-forwarded-for': '203.0.113.7',
        'x-forwarded-proto': 'https',
        'x-real-ip': '6.6.6.6',
      },
    });
    await res.text();
    const seen = headersSeen[0] as IncomingHttpHeaders;
    assert.equal(seen['x-forwarded-proto'], 'https', 'kept from the trusted TLS proxy');
    assert.equal(seen['x-forwarded-for'], '203.0.113.7, 127.0.0.1');
    assert.equal(seen['x-real-ip'], '203.0.113.7');
    assert.match(String(seen.forwarded), /for=127\.0\.0\.1;host=.*;proto=https$/);
  });

  it('a Connection header naming thousands of names, beside hundreds of headers, costs no more than the same bytes in another header; the named ones are dropped', async () => {
    // Each request near the largest header block Node accepts (16 KiB): 5,000 names in Connection, 500
    // header lines. Looked up name by name in a list, that was 2.5 million comparisons per request, and
    // 300 of them kept the event loop busy for over a second. The gateway's CPU time for them is compared
    // with its time for the same requests carrying the names in an ordinary header (forwarded, so more
    // work), in the same run: a ratio, which a slow or busy machine does not move the way it moves a
    // probe's wall-clock time.
    const names = Array.from({ length: 5000 }, () => 'n').join(',');
    const lines = Array.from({ length: 500 }, (_, i) => `h${i}: x\r\n`).join('');
    const send = (client: string, head: string) =>
      new Promise<string>((resolve) => {
        const socket = connect(sluice.proxy as number, '127.0.0.1');
        socket.write(`GET /headers HTTP/1.1\r\nhost: x\r\nx-forwarded-for: ${client}\r\n${head}${lines}\r\n`);
        let text = '';
        socket.on('data', (chunk: Buffer) => {
          text += chunk.toString();
        });
        socket.on('close', () => resolve(text.split(' ')[1] ?? 'cut'));
        socket.on('error', () => resolve('error'));
      });
    const batch = (head: string) =>
      Promise.all(
        Array.from({ length: 300 }, (_, i) => send(`198.51.${100 + Math.floor(i / 250)}.${(i % 250) + 1}`, head)),
      );
    const inConnection = `connection: close, ${names}, h7, X-Hop\r\nx-hop: 1\r\n`;
    const inAnotherHeader = `connection: close, h7, X-Hop\r\nx-hop: 1\r\nx-names: ${names}\r\n`;
    await batch(inAnotherHeader); // warms the gateway's code paths before either batch is timed
    await batch(inConnection);
    const ordinary = await cpuSpent(sluice.pid, () => batch(inAnotherHeader));
    headersSeen.length = 0;
    const attack = await cpuSpent(sluice.pid, () => batch(inConnection));
    assert.deepEqual([...new Set(attack.result)], ['200'], JSON.stringify(attack.result.slice(0, 10)));
    assert.deepEqual([...new Set(ordinary.result)], ['200'], JSON.stringify(ordinary.result.slice(0, 10)));
    // 2×, plus 50 ms for the 10 ms steps /proc counts in. Measured: 1.1–1.3× here, and a lookup in a list
    // (the old bug, put back on the request path alone) 3.8× (1,690 ms against 440).
    assert.ok(
      attack.ms <= 2 * ordinary.ms + 50,
      `300 requests with 5,000 names in Connection cost the gateway ${attack.ms} ms of CPU, the same names in another header ${ordinary.ms} ms`,
    );
    assert.equal((await probe()).status, 200, 'another client is still served');
    const seen = headersSeen[0] as IncomingHttpHeaders;
    assert.equal(seen.h6, 'x', 'a header the Connection value does not name is forwarded');
    assert.equal(seen.h7, undefined, 'a header the Connection value names is not');
    assert.equal(seen['x-hop'], undefined, 'names are matched in any case');
    assert.equal(seen['x-names'], undefined, 'the attack batch carried its names in Connection only');
  });

  it('tunnels a websocket upgrade to the upstream, after the rules', async () => {
    const socket = connect(sluice.proxy as number, '127.0.0.1');
    socket.write(
      'GET /chat HTTP/1.1\r\nhost: x\r\nconnection: Upgrade\r\nupgrade: websocket\r\nx-forwarded-for: 198.51.100.9\r\n\r\n',
    );
    let text = '';
    await new Promise<void>((resolve) => {
      socket.on('data', (chunk: Buffer) => {
        text += chunk.toString();
        if (text.includes('\r\n\r\n') && !text.includes('ping')) socket.write('ping');
        if (text.includes('ping')) resolve();
      });
    });
    socket.destroy();
    assert.match(text, /^HTTP\/1\.1 101 /);
    assert.match(text, /x-upstream: yes/i);
    assert.ok(text.endsWith('ping'), 'bytes go both ways through the tunnel');
  });
});
