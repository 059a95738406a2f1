/**
 * Attacks on the HTTP API, metrics, dashboard and admin of the real `sluice serve` (issue 12, items 4, 5,
 * 7 and 10): floods of distinct keys, unknown domains and invented policies that used to grow /metrics
 * without bound, over-long keys, a malformed admin path, token guessing, a short token, and keep-alive
 * clients at shutdown. Each asserts its error code; the floods run under the abuse harness (alive, probe
 * within 1 s, RSS and /metrics bounds).
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { Agent, createServer, request as httpRequest } from 'node:http';
import { connect } from 'node:http2';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { encodeRateLimitRequestFrame } from '../../src/rls/wire.js';
import { CLI, ROOT, type SluiceProcess, startSluice, tempFile } from '../integration/helpers.js';
import { MB, underAttack } from './harness.js';
import { probeHttp } from './probe.js';

const TOKEN = 'abuse-admin-token-0123456789abcdef';
const CONFIG = `domain: probe
descriptors:
  - key: probe
    rate_limit: { unit: second, requests_per_unit: 1000000 }
  - key: k
    rate_limit: { unit: minute, requests_per_unit: 10 }
`;
const BOUNDS = { maxRssBytes: 400 * MB, maxMetricsBytes: 64 * 1024 };
const PATH = '/envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit';

/** One gRPC call on `session`; resolves with its grpc-status. */
function grpcCall(session: ReturnType<typeof connect>, frame: Buffer): Promise<string> {
  return new Promise((resolve) => {
    const stream = session.request({
      ':method': 'POST',
      ':path': PATH,
      'content-type': 'application/grpc',
      te: 'trailers',
    });
    let status = 'none';
    stream.on('response', (h) => {
      if (h['grpc-status'] !== undefined) status = String(h['grpc-status']);
    });
    stream.on('trailers', (t) => {
      if (t['grpc-status'] !== undefined) status = String(t['grpc-status']);
    });
    stream.on('data', () => {});
    stream.on('error', () => {});
    stream.on('close', () => resolve(status));
    stream.end(frame);
  });
}

describe('service abuse (HTTP API, metrics, dashboard, admin)', () => {
  let sluice: SluiceProcess;
  let config: ReturnType<typeof tempFile>;
  before(async () => {
    config = tempFile('probe.yaml', CONFIG);
    sluice = await startSluice(['--config', config.path, '--no-watch'], {
      SLUICE_ADMIN_TOKEN: TOKEN,
    });
  });
  after(async () => {
    await sluice?.stop();
    config?.remove();
  });
  const base = () => `http://127.0.0.1:${sluice.http}`;
  const probe = () => probeHttp(sluice.http);
  const post = async (path: string, body: unknown) => {
    const res = await fetch(`${base()}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    return { status: res.status, json: (await res.json()) as Record<string, unknown> };
  };

  it('a flood of distinct 1 KB keys through /json: bounded memory and metrics', async () => {
    const value = 'x'.repeat(1000);
    await underAttack(sluice, probe, 200, BOUNDS, async () => {
      for (let batch = 0; batch < 40; batch++) {
        const descriptors = Array.from({ length: 500 }, (_, i) => ({
          entries: [{ key: 'k', value: `${value}${batch * 500 + i}` }],
        }));
        const { status } = await post('/json', { domain: 'probe', descriptors });
        assert.equal(status, 200);
      }
    });
  });

  it('unknown gRPC domains and invented /v1/check policies fold into bounded metric labels', async () => {
    await underAttack(sluice, probe, 200, BOUNDS, async () => {
      const session = connect(`http://127.0.0.1:${sluice.grpc}`);
      session.on('error', () => {});
      for (let i = 0; i < 2000; i += 100) {
        const calls = Array.from({ length: 100 }, (_, j) =>
          grpcCall(
            session,
            encodeRateLimitRequestFrame({
              domain: `${'d'.repeat(200)}${i + j}`,
              descriptors: [{ entries: [{ key: 'k', value: 'v' }] }],
            }),
          ),
        );
        assert.deepEqual(new Set(await Promise.all(calls)), new Set(['0']), 'unknown domains are answered OK');
      }
      session.destroy();
      for (let i = 0; i < 2000; i += 500) {
        const checks = Array.from({ length: 500 }, (_, j) => ({ key: 'k', limit: 100 + i + j, period: '1m' }));
        assert.equal((await post('/v1/check', { checks })).status, 200);
      }
    });
    const metrics = await (await fetch(`${base()}/metrics`)).text();
    const decisions = metrics.split('\n').filter((line) => line.startsWith('sluice_decisions_total{'));
    assert.ok(
      decisions.includes('sluice_decisions_total{domain="_unknown",rule="",outcome="ok"} 2000'),
      decisions.join('\n'),
    );
    assert.ok(
      decisions.includes('sluice_decisions_total{domain="",rule="_adhoc",outcome="ok"} 2000'),
      decisions.join('\n'),
    );
    assert.ok(!metrics.includes('ddddd'), 'no client-chosen domain is a label');
  });

  it('refuses over-long domains, keys and values on /json and gRPC with ERR_SLUICE_REQUEST_VALUE_TOO_LONG', async () => {
    const long = { domain: 'probe', descriptors: [{ entries: [{ key: 'k', value: 'v'.repeat(1025) }] }] };
    const json = await post('/json', long);
    assert.equal(json.status, 400);
    assert.equal((json.json.error as { code: string }).code, 'ERR_SLUICE_REQUEST_VALUE_TOO_LONG');
    const domain = await post('/json', { ...long, domain: 'd'.repeat(257) });
    assert.equal((domain.json.error as { code: string }).code, 'ERR_SLUICE_REQUEST_VALUE_TOO_LONG');
    const session = connect(`http://127.0.0.1:${sluice.grpc}`);
    session.on('error', () => {});
    const status = await grpcCall(session, encodeRateLimitRequestFrame(long));
    session.destroy();
    assert.equal(status, '3', 'INVALID_ARGUMENT');
  });

  it('answers a malformed escape in an admin path with 400, and slows down token guessing', async () => {
    const bad = await fetch(`${base()}/admin/lists/deny/%E0%A4%A`, {
      method: 'DELETE',
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    assert.equal(bad.status, 400);
    assert.equal(((await bad.json()) as { error: { code: string } }).error.code, 'ERR_SLUICE_BAD_PATH');
    const statuses: number[] = [];
    for (let i = 0; i < 8; i++) {
      const res = await fetch(`${base()}/admin/lists`, {
        headers: { authorization: `Bearer wrong-${i}-0123456789abcdef` },
      });
      await res.arrayBuffer();
      statuses.push(res.status);
    }
    assert.deepEqual(statuses, [403, 403, 403, 403, 403, 403, 429, 429]);
  });

  it('marks answers `Connection: close` while shutting down, so keep-alive clients do not reuse the connection', async () => {
    // A request held at the upstream is in flight through the gateway when SIGTERM comes.
    let arrived: () => void = () => {};
    const atUpstream = new Promise<void>((resolve) => {
      arrived = resolve;
    });
    let answer: () => void = () => {};
    const upstream = createServer((req, res) => {
      req.resume();
      answer = () => res.end('done');
      arrived();
    });
    await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
    const own = await startSluice([
      '--config',
      config.path,
      '--no-watch',
      '--upstream',
      `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`,
    ]);
    try {
      const agent = new Agent({ keepAlive: true });
      const connection = new Promise<string | undefined>((resolve, reject) => {
        const req = httpRequest(`http://127.0.0.1:${own.proxy}/slow`, { agent });
        req.on('response', (res) => {
          res.resume();
          resolve(res.headers.connection);
        });
        req.on('error', reject);
        req.end();
      });
      await atUpstream;
      own.child.kill('SIGTERM');
      await own.waitForLog((r) => r.msg === 'shutting down');
      answer();
      assert.equal(await connection, 'close');
      agent.destroy();
      assert.equal((await own.exited).code, 0);
    } finally {
      await own.stop();
      upstream.closeAllConnections();
      upstream.close();
    }
  });

  it('refuses to start with an admin token shorter than 16 characters, and says so', async () => {
    const child = spawn(process.execPath, [...CLI, 'serve', '--port', '0', '--grpc-port', '0', '--host', '127.0.0.1'], {
      cwd: ROOT,
      env: { ...process.env, SLUICE_ADMIN_TOKEN: 'short-token' },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (c: Buffer) => {
      stderr += c.toString();
    });
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
    assert.equal(code, 1);
    assert.match(stderr, /at least 16 characters, got 11/);
  });
});
