/**
 * The HTTP API end to end (`POST /json`, `POST /v1/check`, `/healthcheck`, `/metrics`): good requests,
 * and every kind of bad one — the service answers each with a JSON error and stays up.
 */
import assert from 'node:assert/strict';
import { request } from 'node:http';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { postJson, ROOT, type SluiceProcess, startSluice, unique } from './helpers.js';

const CONFIG = join(ROOT, 'test', 'integration', 'fixtures', 'envoy.yaml');

describe('HTTP API', () => {
  let sluice: SluiceProcess;
  let base: string;
  const json = (body: unknown) => postJson(`${base}/json`, body);
  const check = (body: unknown) => postJson(`${base}/v1/check`, body);
  const errorCode = (res: { json: Record<string, unknown> }) =>
    (res.json?.error as { code?: string } | undefined)?.code;

  before(async () => {
    sluice = await startSluice(['--config', CONFIG, '--max-body', '65536']);
    base = `http://127.0.0.1:${sluice.http}`;
  });
  after(async () => {
    assert.equal((await sluice?.stop())?.code, 0);
  });

  it('POST /json answers like the gRPC API: 200, then 429 over the limit, with the headers', async () => {
    const key = unique('j');
    const body = { domain: 'it', descriptors: [{ entries: [{ key: 'specific', value: key }] }] };
    const first = await json(body);
    assert.equal(first.status, 200);
    assert.equal(first.json.overallCode, 'OK');
    const status = (first.json.statuses as Record<string, unknown>[])[0];
    assert.deepEqual(status?.currentLimit, { requestsPerUnit: 1, unit: 'DAY' });
    assert.equal(status?.limitRemaining, 0);
    assert.match(String(status?.durationUntilReset), /^\d+(\.\d{3})?s$/);
    assert.equal(first.headers.get('x-ratelimit-limit'), '1');
    const second = await json(body);
    assert.equal(second.status, 429);
    assert.equal(second.json.overallCode, 'OVER_LIMIT');
    assert.match(second.headers.get('retry-after') ?? '', /^\d+$/);
    assert.match(second.headers.get('ratelimit') ?? '', /;r=0;t=\d+$/);
  });

  it('POST /json takes snake_case fields as protojson does', async () => {
    const key = unique('s');
    const res = await json({
      domain: 'it',
      descriptors: [
        { entries: [{ key: 'per_day', value: key }], hits_addend: 4, limit: { requests_per_unit: 10, unit: 'hour' } },
      ],
    });
    assert.equal(res.status, 200);
    const status = (res.json.statuses as Record<string, unknown>[])[0];
    assert.equal(status?.limitRemaining, 6);
    assert.deepEqual(status?.currentLimit, { requestsPerUnit: 10, unit: 'HOUR' });
  });

  it('POST /json refuses bad requests with 400 and a code', async () => {
    const cases: [unknown, number, string][] = [
      ['{"domain": "it", "descriptors": [', 400, 'ERR_SLUICE_BAD_JSON'],
      ['', 400, 'ERR_SLUICE_BAD_JSON'],
      ['[1, 2]', 400, 'ERR_SLUICE_REQUEST_INVALID'],
      [{ domain: 5, descriptors: [] }, 400, 'ERR_SLUICE_REQUEST_INVALID'],
      [{ domain: '', descriptors: [{ entries: [] }] }, 400, 'ERR_SLUICE_REQUEST_EMPTY_DOMAIN'],
      [{ domain: 'it', descriptors: [] }, 400, 'ERR_SLUICE_REQUEST_EMPTY_DESCRIPTORS'],
      [{ domain: 'it', descriptors: 'per_day' }, 400, 'ERR_SLUICE_REQUEST_INVALID'],
      [{ domain: 'it', descriptors: [{ entries: [{ key: 'a', value: 7 }] }] }, 400, 'ERR_SLUICE_REQUEST_INVALID'],
      [
        { domain: 'it', descriptors: [{ entries: [{ key: 'a', value: 'b' }], hits_addend: -1 }] },
        400,
        'ERR_SLUICE_REQUEST_INVALID',
      ],
      [
        {
          domain: 'it',
          descriptors: [{ entries: [{ key: 'a', value: 'b' }], limit: { requests_per_unit: 1, unit: 'fortnight' } }],
        },
        400,
        'ERR_SLUICE_REQUEST_INVALID',
      ],
      [
        { domain: 'it', descriptors: Array.from({ length: 1001 }, () => ({ entries: [{ key: 'a', value: 'b' }] })) },
        400,
        'ERR_SLUICE_TOO_MANY_ITEMS',
      ],
    ];
    for (const [body, status, code] of cases) {
      const res = await json(body);
      assert.equal(res.status, status, `${JSON.stringify(body).slice(0, 80)} -> ${res.text.slice(0, 200)}`);
      assert.equal(errorCode(res), code, JSON.stringify(body).slice(0, 80));
      assert.equal(typeof (res.json.error as { message?: unknown }).message, 'string');
    }
  });

  it('POST /v1/check decides each check in request order, with per-check errors', async () => {
    const key = unique('c');
    const res = await check({
      checks: [
        { key, limit: 2, period: '1h' },
        { key, limit: 2, period: '1h' },
        { key, limit: 2, period: '1h' },
        { key: `${key}-tb`, limit: 10, period: '1s', algorithm: 'token-bucket', burst: 3, cost: 2 },
        { key: `${key}-big`, limit: 5, period: '1m', cost: 6 },
        { key, limit: 'ten', period: '1h' },
        { key: '', limit: 1, period: '1h' },
        { key, limit: 1, period: '1 fortnight' },
        { key, limit: 1, period: '1h', algorithm: 'magic' },
        { key, limit: 1, period: '1h', colour: 'blue' },
        { key, limit: 1, period: '1h', cost: -1 },
        'not an object',
      ],
    });
    assert.equal(res.status, 200);
    const results = res.json.results as Record<string, unknown>[];
    assert.equal(results.length, 12);
    assert.deepEqual(
      results.slice(0, 3).map((r) => [r.allowed, r.remaining]),
      [
        [true, 1],
        [true, 0],
        [false, 0],
      ],
    );
    assert.ok((results[2]?.retryAfterMs as number) > 0);
    assert.equal(results[3]?.allowed, true);
    assert.equal(results[3]?.remaining, 1);
    assert.equal(results[4]?.allowed, false);
    assert.equal(results[4]?.retryAfterMs, null, 'a cost above capacity can never pass');
    assert.equal(results[4]?.reason, 'cost-exceeds-capacity');
    const codes = results.slice(5).map((r) => (r.error as { code?: string } | undefined)?.code);
    assert.deepEqual(codes, [
      'ERR_SLUICE_INVALID_LIMIT',
      'ERR_SLUICE_INVALID_KEY',
      'ERR_SLUICE_INVALID_DURATION',
      'ERR_SLUICE_INVALID_ALGORITHM',
      'ERR_SLUICE_UNKNOWN_OPTION',
      'ERR_SLUICE_INVALID_COST',
      'ERR_SLUICE_INVALID_REQUEST',
    ]);
    assert.match(String((results[5]?.error as { message: string }).message), /^checks\[5\]\.limit/);
  });

  it('POST /v1/check bounds what a caller sends: field lengths, nesting, sliding-log size, block duration', async () => {
    const key = unique('b');
    const deep = `${'['.repeat(20_000)}${']'.repeat(20_000)}`; // deeper than JSON.stringify can walk
    const body = JSON.stringify({
      checks: [
        { key, limit: 1, period: '1s', x: 1 },
        { key, limit: 1, period: '1s', algorithm: 'a'.repeat(10_000) },
        { key, limit: 1e9, period: '3650d', algorithm: 'sliding-log' },
        { key, limit: 10, period: '1m', blockDuration: '3661d' },
        { key: 'k'.repeat(1025), limit: 1, period: '1s' },
        { key, limit: 1, period: { nested: [1, 2, 3] } },
        { key, limit: 10_000, period: '365d', algorithm: 'sliding-log' },
      ],
    }).replace('"x":1', `"x":${deep}`);
    const res = await check(body);
    assert.equal(res.status, 200);
    const results = res.json.results as Record<string, { code: string; message: string } | undefined>[];
    assert.deepEqual(
      results.map((r) => r.error?.code),
      [
        'ERR_SLUICE_UNKNOWN_OPTION',
        'ERR_SLUICE_FIELD_TOO_LONG',
        'ERR_SLUICE_SLIDING_LOG_TOO_LARGE',
        'ERR_SLUICE_INVALID_BLOCK',
        'ERR_SLUICE_INVALID_KEY',
        'ERR_SLUICE_INVALID_OPTION',
        undefined,
      ],
    );
    assert.match(results[2]?.error?.message ?? '', /'sliding-window'/);
    // Nothing the caller sent is echoed back at length.
    assert.ok(JSON.stringify(res.json).length < 4000);
  });

  it('POST /v1/check refuses bad bodies with 400 and a code', async () => {
    const cases: [unknown, string][] = [
      ['{"checks": [', 'ERR_SLUICE_BAD_JSON'],
      [{ checks: 'all' }, 'ERR_SLUICE_INVALID_REQUEST'],
      [{ check: [] }, 'ERR_SLUICE_INVALID_REQUEST'],
      [{ checks: [], extra: 1 }, 'ERR_SLUICE_INVALID_REQUEST'],
      [
        { checks: Array.from({ length: 1001 }, (_, i) => ({ key: `k${i}`, limit: 1, period: '1s' })) },
        'ERR_SLUICE_TOO_MANY_ITEMS',
      ],
    ];
    for (const [body, code] of cases) {
      const res = await check(body);
      assert.equal(res.status, 400, JSON.stringify(body).slice(0, 60));
      assert.equal(errorCode(res), code);
    }
    const thousand = await check({
      checks: Array.from({ length: 1000 }, (_, i) => ({ key: unique(`k${i}`), limit: 1, period: '1s' })),
    });
    assert.equal(thousand.status, 200);
    assert.equal((thousand.json.results as unknown[]).length, 1000);
  });

  it('limits body size: 413 whether the length is announced or streamed', async () => {
    const huge = JSON.stringify({ checks: [{ key: 'x'.repeat(200_000), limit: 1, period: '1s' }] });
    const announced = await check(huge);
    assert.equal(announced.status, 413);
    assert.equal(errorCode(announced), 'ERR_SLUICE_BODY_TOO_LARGE');
    // Chunked, no Content-Length: the limit applies while reading.
    const streamed = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = request(
        `${base}/json`,
        { method: 'POST', headers: { 'content-type': 'application/json' } },
        (res) => {
          let body = '';
          res.on('data', (c: Buffer) => {
            body += c.toString();
          });
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
        },
      );
      req.on('error', reject);
      const chunk = 'x'.repeat(16_384);
      for (let i = 0; i < 8; i++) req.write(chunk);
      req.end();
    });
    assert.equal(streamed.status, 413);
    assert.equal(JSON.parse(streamed.body).error.code, 'ERR_SLUICE_BODY_TOO_LARGE');
  });

  it('answers unknown paths and wrong methods with JSON errors', async () => {
    const missing = await fetch(`${base}/nope`);
    assert.equal(missing.status, 404);
    assert.equal((await missing.json()).error.code, 'ERR_SLUICE_NOT_FOUND');
    const wrong = await fetch(`${base}/json`);
    assert.equal(wrong.status, 405);
    assert.equal((await wrong.json()).error.code, 'ERR_SLUICE_METHOD_NOT_ALLOWED');
    const admin = await fetch(`${base}/admin/lists`);
    assert.equal(admin.status, 404, 'admin is off without SLUICE_ADMIN_TOKEN');
    assert.equal((await admin.json()).error.code, 'ERR_SLUICE_ADMIN_DISABLED');
  });

  it('is still healthy, and /metrics counts decisions by domain, rule and outcome', async () => {
    const health = await fetch(`${base}/healthcheck`);
    assert.equal(health.status, 200);
    assert.deepEqual(await health.json(), { status: 'ok', store: 'memory', storeReachable: true });
    const shadowKey = unique('sh');
    for (let i = 0; i < 2; i++)
      await json({ domain: 'it', descriptors: [{ entries: [{ key: 'shadowed', value: shadowKey }] }] });
    const text = await (await fetch(`${base}/metrics`)).text();
    assert.match(text, /^sluice_decisions_total\{domain="it",rule="[^"]*specific[^"]*",outcome="over_limit"\} [1-9]/m);
    assert.match(text, /^sluice_decisions_total\{domain="it",rule="[^"]*shadowed[^"]*",outcome="shadow"\} [1-9]/m);
    assert.match(text, /^sluice_decisions_total\{domain="",rule="[^"]+",outcome="(ok|near_limit)"\} [1-9]/m);
    assert.match(text, /^sluice_store_latency_seconds_bucket\{le="0.001",store="memory"\} [1-9]/m);
    assert.match(text, /^sluice_store_errors_total\{store="memory"\} 0/m);
    assert.match(text, /^sluice_config_reloads_total\{result="failed"\} 0/m);
    assert.match(text, /^sluice_http_responses_total\{route="json",status="400"\} [1-9]/m);
    assert.match(text, /^sluice_local_cache_hits_total\{store="memory"\} 0/m);
  });
});
