/**
 * Gateway mode end to end: `sluice serve --upstream URL` in front of a real HTTP server. Requests pass
 * with the upstream's status and headers, bodies stream both ways, the config's `http:` rules limit with
 * a 429 answered by the gateway itself, deny entries answer 403, and a dead upstream gives 502.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { createServer, request, type Server } from 'node:http';
import { type AddressInfo, connect } from 'node:net';
import { Readable } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import { type SluiceProcess, startSluice, tempFile, unique } from './helpers.js';

const TOKEN = 'gateway-admin-token-0123456789';
const RULES = `domain: gw
descriptors:
  - key: remote_address
    rate_limit: { unit: day, requests_per_unit: 100000 }
  - key: path
    value: /limited
    rate_limit: { name: limited-path, unit: day, requests_per_unit: 2 }
http:
  rate_limits:
    - actions:
        - remote_address: {}
    - actions:
        - path: { descriptor_key: path }
`;

const MB = 1024 * 1024;

/** Sends `text` on a new connection and resolves to everything the server sends back until it closes. */
function rawExchange(port: number, text: string): Promise<string> {
  return new Promise((resolve, reject) => {
    // write(), not end(): a client that half-closes may be answered by a closed connection.
    const socket = connect(port, '127.0.0.1', () => socket.write(text));
    let out = '';
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => {
      out += chunk;
    });
    socket.on('end', () => resolve(out));
    socket.on('error', reject);
  });
}

/** Bytes of a deterministic pattern, so both ends can check what went through. */
function pattern(size: number): Readable {
  let sent = 0;
  return new Readable({
    read() {
      if (sent >= size) {
        this.push(null);
        return;
      }
      const n = Math.min(64 * 1024, size - sent);
      const chunk = Buffer.alloc(n);
      for (let i = 0; i < n; i++) chunk[i] = (sent + i) % 251;
      sent += n;
      this.push(chunk);
    },
  });
}

describe('gateway', () => {
  let upstream: Server;
  let sluice: SluiceProcess;
  let config: ReturnType<typeof tempFile>;
  let gateway: string;
  const seen: string[] = [];

  before(async () => {
    upstream = createServer((req, res) => {
      seen.push(req.url ?? '');
      if (req.url === '/upload') {
        const hash = createHash('sha256');
        let size = 0;
        req.on('data', (c: Buffer) => {
          size += c.length;
          hash.update(c);
        });
        req.on('end', () => {
          res.writeHead(200, { 'content-type': 'application/json' });
          res.end(JSON.stringify({ size, sha256: hash.digest('hex') }));
        });
        return;
      }
      if (req.url === '/echo-headers') {
        req.resume();
        const { forwarded, 'x-forwarded-for': xff, 'x-forwarded-proto': proto, 'x-real-ip': realIp } = req.headers;
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ forwarded, xff, proto, realIp }));
        return;
      }
      if (req.url === '/echo-framing') {
        let size = 0;
        req.on('data', (c: Buffer) => {
          size += c.length;
        });
        req.on('end', () => {
          const { host, 'content-length': length, 'transfer-encoding': te, 'x-custom': custom } = req.headers;
          const body = JSON.stringify({ method: req.method, host, length, te, custom, size });
          res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
          res.end(body);
        });
        return;
      }
      if (req.url === '/cut') {
        // Promises 1000 bytes, sends 10, then drops the connection: a broken upstream response.
        req.resume();
        res.writeHead(200, { 'content-type': 'text/plain', 'content-length': '1000' });
        res.write('0123456789', () => res.socket?.destroy());
        return;
      }
      if (req.url?.startsWith('/download')) {
        res.writeHead(200, { 'content-type': 'application/octet-stream' });
        pattern(16 * MB).pipe(res);
        return;
      }
      req.resume();
      res.writeHead(201, [
        ['content-type', 'text/plain'],
        ['x-upstream', 'yes'],
        ['set-cookie', 'a=1'],
        ['set-cookie', 'b=2'],
      ]);
      res.end(`hello ${req.method} ${req.url} via ${String(req.headers['x-forwarded-for'])}`);
    });
    await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
    const port = (upstream.address() as AddressInfo).port;
    config = tempFile('gw.yaml', RULES);
    sluice = await startSluice(['--config', config.path, '--upstream', `http://127.0.0.1:${port}`], {
      SLUICE_ADMIN_TOKEN: TOKEN,
    });
    assert.ok(sluice.proxy, 'the gateway port is logged');
    gateway = `http://127.0.0.1:${sluice.proxy}`;
  });
  after(async () => {
    upstream?.closeAllConnections();
    await new Promise((resolve) => upstream?.close(resolve));
    assert.equal((await sluice?.stop())?.code, 0);
    config?.remove();
  });

  it('passes requests with the upstream status, headers and body, plus the rate-limit headers', async () => {
    const res = await fetch(`${gateway}/hello?x=1`, { method: 'POST', body: 'hi' });
    assert.equal(res.status, 201);
    assert.equal(res.headers.get('x-upstream'), 'yes');
    assert.deepEqual(res.headers.getSetCookie(), ['a=1', 'b=2']);
    assert.equal(res.headers.get('x-ratelimit-limit'), '100000');
    assert.match(res.headers.get('ratelimit-policy') ?? '', /;q=100000;w=86400$/);
    assert.equal(await res.text(), 'hello POST /hello?x=1 via 127.0.0.1');
  });

  it('limits with 429, the headers and the JSON body, without calling the upstream', async () => {
    const before = seen.filter((u) => u === '/limited').length;
    assert.equal((await fetch(`${gateway}/limited`)).status, 201);
    assert.equal((await fetch(`${gateway}/limited`)).status, 201);
    const limited = await fetch(`${gateway}/limited`);
    assert.equal(limited.status, 429);
    assert.equal(limited.headers.get('content-type'), 'application/json; charset=utf-8');
    assert.equal(limited.headers.get('cache-control'), 'no-store', 'no shared cache keeps one client’s rejection');
    assert.equal(limited.headers.get('x-ratelimit-limit'), '2');
    assert.equal(limited.headers.get('x-ratelimit-remaining'), '0');
    assert.match(limited.headers.get('ratelimit') ?? '', /^"limited-path";r=0;t=\d+$/);
    assert.match(limited.headers.get('retry-after') ?? '', /^\d+$/);
    const body = (await limited.json()) as { error: { code: string; retry_after: number } };
    assert.equal(body.error.code, 'RATE_LIMIT_EXCEEDED');
    assert.equal(typeof body.error.retry_after, 'number');
    assert.equal(seen.filter((u) => u === '/limited').length - before, 2, 'the upstream saw only the two that passed');
  });

  it('answers its 429 as problem details naming the violated policy when Accept asks for it (issue 41)', async () => {
    // Over the limit since the test above; other clients keep the JSON body.
    const accept = 'application/problem+json, application/json;q=0.5';
    const limited = await fetch(`${gateway}/limited`, { headers: { accept } });
    assert.equal(limited.status, 429);
    assert.equal(limited.headers.get('content-type'), 'application/problem+json');
    assert.equal(limited.headers.get('cache-control'), 'no-store');
    assert.equal(limited.headers.get('x-ratelimit-limit'), '2');
    assert.match(limited.headers.get('retry-after') ?? '', /^\d+$/);
    const problem = (await limited.json()) as Record<string, unknown>;
    assert.equal(problem.status, 429);
    assert.equal(problem.type, 'https://iana.org/assignments/http-problem-types#quota-exceeded');
    assert.equal(problem.code, 'RATE_LIMIT_EXCEEDED');
    assert.match(String(problem.detail), /limited-path/);
    assert.deepEqual(problem['violated-policies'], ['limited-path']);
    const refused = await fetch(`${gateway}/limited`, { headers: { accept: 'application/problem+json;q=0' } });
    assert.equal(refused.headers.get('content-type'), 'application/json; charset=utf-8', 'q=0 refuses problem+json');
    assert.equal(((await refused.json()) as { error: { code: string } }).error.code, 'RATE_LIMIT_EXCEEDED');
  });

  it('replaces the forwarding headers an untrusted client sends with what the gateway saw', async () => {
    const res = await fetch(`${gateway}/echo-headers`, {
      headers: {
        forwarded: 'for=6.6.6.6;proto=https',
        'x-forwarded-for': '6.6.6.6',
        'x-forwarded-proto': 'https',
        'x-real-ip': '6.6.6.6',
      },
    });
    const seen = (await res.json()) as Record<string, string>;
    assert.deepEqual(
      { xff: seen.xff, proto: seen.proto, realIp: seen.realIp },
      { xff: '127.0.0.1', proto: 'http', realIp: '127.0.0.1' },
    );
    assert.match(seen.forwarded ?? '', /^for=127\.0\.0\.1;host=[^,]*;proto=http$/);
  });

  it("frames the request body as the client did, with the upstream's Host", async () => {
    const port = (upstream.address() as AddressInfo).port;
    const echo = async (method: string, init: RequestInit = {}) =>
      (await (await fetch(`${gateway}/echo-framing`, { method, ...init })).json()) as Record<string, unknown>;
    // A POST with neither a length nor chunks has no body (RFC 9112 §6.3): it goes with Content-Length: 0.
    const raw = await rawExchange(
      Number(sluice.proxy),
      'POST /echo-framing HTTP/1.1\r\nHost: shop.example\r\nX-Custom: a\r\nConnection: close\r\n\r\n',
    );
    assert.deepEqual(JSON.parse(raw.slice(raw.indexOf('\r\n\r\n') + 4)), {
      method: 'POST',
      host: `127.0.0.1:${port}`,
      length: '0',
      custom: 'a',
      size: 0,
    });
    assert.deepEqual(await echo('POST', { body: 'twelve bytes' }), {
      method: 'POST',
      host: `127.0.0.1:${port}`,
      length: '12',
      size: 12,
    });
    const streamed = await echo('PUT', {
      body: Readable.toWeb(pattern(100_000)) as ReadableStream,
      duplex: 'half',
    } as RequestInit);
    assert.deepEqual(
      { te: streamed.te, length: streamed.length, size: streamed.size },
      {
        te: 'chunked',
        length: undefined,
        size: 100_000,
      },
    );
    assert.deepEqual(await echo('GET'), { method: 'GET', host: `127.0.0.1:${port}`, size: 0 });
  });

  it('streams large bodies both ways', async () => {
    const size = 12 * MB;
    const expected = createHash('sha256');
    await new Promise<void>((resolve, reject) => {
      const hashing = pattern(size);
      hashing.on('data', (c: Buffer) => expected.update(c));
      hashing.on('end', resolve);
      hashing.on('error', reject);
    });
    const uploaded = await new Promise<{ size: number; sha256: string }>((resolve, reject) => {
      const req = request(
        `${gateway}/upload`,
        { method: 'PUT', headers: { 'content-type': 'application/octet-stream' } },
        (res) => {
          let text = '';
          res.on('data', (c: Buffer) => {
            text += c.toString();
          });
          res.on('end', () => resolve(JSON.parse(text)));
        },
      );
      req.on('error', reject);
      pattern(size).pipe(req);
    });
    assert.deepEqual(uploaded, { size, sha256: expected.digest('hex') });

    const res = await fetch(`${gateway}/download`);
    assert.equal(res.status, 200);
    let received = 0;
    let ok = true;
    for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
      for (let i = 0; i < chunk.length; i += 4099) if (chunk[i] !== (received + i) % 251) ok = false;
      received += chunk.length;
    }
    assert.equal(received, 16 * MB);
    assert.ok(ok, 'the bytes arrive unchanged');
  });

  it('answers 403 for a denied client address, on the next request', async () => {
    const add = await fetch(`http://127.0.0.1:${sluice.http}/admin/lists/deny`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ key: 'remote_address', value: '127.0.0.0/8' }),
    });
    const { id } = (await add.json()) as { id: string };
    const denied = await fetch(`${gateway}/${unique('p')}`);
    assert.equal(denied.status, 403);
    assert.equal(((await denied.json()) as { error: { code: string } }).error.code, 'ACCESS_DENIED');
    await fetch(`http://127.0.0.1:${sluice.http}/admin/lists/deny/${id}`, {
      method: 'DELETE',
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    assert.equal((await fetch(`${gateway}/${unique('p')}`)).status, 201);
  });

  it("cuts the client's response when the upstream's breaks off, and keeps serving", async () => {
    const outcome = await new Promise<string>((resolve) => {
      const req = request(`${gateway}/cut`, (res) => {
        let got = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => {
          got += c;
        });
        res.on('error', () => resolve(`cut after ${got}`));
        res.on('end', () => resolve(`ended after ${got}`));
      });
      req.on('error', (e) => resolve(`request error ${e.message}`));
      req.end();
    });
    assert.equal(outcome, 'cut after 0123456789');
    assert.equal((await fetch(`${gateway}/after-cut`)).status, 201);
  });

  it('answers 502 when the upstream is down, and keeps serving', async () => {
    upstream.closeAllConnections();
    await new Promise((resolve) => upstream.close(resolve));
    const res = await fetch(`${gateway}/anything`);
    assert.equal(res.status, 502);
    assert.equal(((await res.json()) as { error: { code: string } }).error.code, 'ERR_SLUICE_UPSTREAM_UNAVAILABLE');
    assert.equal((await fetch(`http://127.0.0.1:${sluice.http}/healthcheck`)).status, 200);
  });
});
