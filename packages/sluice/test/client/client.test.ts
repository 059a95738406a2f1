import assert from 'node:assert/strict';
import { Readable } from 'node:stream';
import { after, afterEach, describe, it } from 'node:test';
import { createSeededRandom } from '../../../server/src/tools/simulate/random.js';
import { createClient, type RetryInfo } from '../../src/client/index.js';
import { type ScriptedResponse, startLimitedServer, startScriptedServer, type TestServer } from './servers.js';
import { createVirtualTime, type VirtualTime } from './virtual-time.js';

const servers: TestServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
});
after(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

async function scripted(time: VirtualTime, script: readonly ScriptedResponse[]): Promise<TestServer> {
  const server = await startScriptedServer(time.clock, script);
  servers.push(server);
  return server;
}

function clientOn(time: VirtualTime, options: Parameters<typeof createClient>[0] = {}) {
  const retries: RetryInfo[] = [];
  const client = createClient({
    fetch: time.fetch,
    clock: time.clock,
    sleep: time.sleep,
    random: createSeededRandom(1),
    onRetry: (info) => retries.push(info),
    ...options,
  });
  return { client, retries };
}

describe('client against a sluice-limited server', () => {
  it('waits the Retry-After the server sends, then gets through', async () => {
    const time = createVirtualTime(1_000_000);
    const server = await startLimitedServer({ clock: time.clock, limit: 2, periodMs: 10_000 });
    servers.push(server);
    const { client, retries } = clientOn(time);
    const statuses: number[] = [];
    for (let i = 0; i < 3; i++) statuses.push((await client.fetch(server.url)).status);
    assert.deepEqual(statuses, [200, 200, 200]);
    assert.deepEqual(
      server.arrivals.map((a) => [a.status, a.atMs]),
      [
        [200, 1_000_000],
        [200, 1_000_000],
        [429, 1_000_000],
        [200, 1_010_000],
      ],
    );
    assert.deepEqual(time.sleeps, [10_000]);
    assert.equal(retries[0]?.source, 'retry-after');
    assert.equal(retries[0]?.status, 429);
    assert.equal(retries[0]?.url, server.url);
  });

  it('with a token bucket, waits only until the next token', async () => {
    const time = createVirtualTime(1_000_000);
    const server = await startLimitedServer({ clock: time.clock, limit: 1, periodMs: 3000, algorithm: 'token-bucket' });
    servers.push(server);
    const { client } = clientOn(time);
    assert.equal((await client.fetch(server.url)).status, 200);
    assert.equal((await client.fetch(server.url)).status, 200);
    assert.deepEqual(time.sleeps, [3000]);
  });
});

describe('client: each header form', () => {
  const cases: [string, ScriptedResponse, number, RetryInfo['source']][] = [
    ['Retry-After in seconds', { status: 429, headers: { 'Retry-After': '2' } }, 2000, 'retry-after'],
    [
      'Retry-After as an HTTP date',
      { status: 429, headers: (now) => ({ 'Retry-After': new Date(now + 3000).toUTCString() }) },
      3000,
      'retry-after',
    ],
    [
      'RateLimit t (structured, draft 08+)',
      { status: 429, headers: { RateLimit: '"per-key";r=0;t=4' } },
      4000,
      'ratelimit',
    ],
    [
      'RateLimit reset (dictionary, older drafts)',
      { status: 429, headers: { RateLimit: 'limit=5, remaining=0, reset=9' } },
      9000,
      'ratelimit',
    ],
    ['RateLimit-Reset', { status: 429, headers: { 'RateLimit-Reset': '5' } }, 5000, 'ratelimit-reset'],
    ['X-RateLimit-Reset in seconds', { status: 429, headers: { 'X-RateLimit-Reset': '6' } }, 6000, 'x-ratelimit-reset'],
    [
      'X-RateLimit-Reset as a Unix time',
      { status: 429, headers: (now) => ({ 'X-RateLimit-Reset': String(now / 1000 + 7) }) },
      7000,
      'x-ratelimit-reset',
    ],
    ['503 with Retry-After', { status: 503, headers: { 'Retry-After': '1' } }, 1000, 'retry-after'],
  ];
  for (const [name, response, waitMs, source] of cases) {
    it(`honours ${name}`, async () => {
      // A whole second, so an HTTP date (second precision) says exactly what was meant.
      const time = createVirtualTime(1_767_225_600_000);
      const server = await scripted(time, [response]);
      const { client, retries } = clientOn(time);
      const res = await client.fetch(server.url);
      assert.equal(res.status, 200);
      assert.equal(await res.text(), 'ok');
      assert.deepEqual(time.sleeps, [waitMs]);
      assert.equal(retries[0]?.source, source);
      assert.deepEqual(
        server.arrivals.map((a) => a.atMs - 1_767_225_600_000),
        [0, waitMs],
      );
    });
  }

  it('without a hint, backs off with full jitter under a doubling ceiling', async () => {
    const time = createVirtualTime();
    const server = await scripted(
      time,
      Array.from({ length: 5 }, () => ({ status: 503 })),
    );
    const { client, retries } = clientOn(time, { retries: 5, baseDelayMs: 100, maxDelayMs: 1000 });
    assert.equal((await client.fetch(server.url)).status, 200);
    assert.equal(time.sleeps.length, 5);
    for (const [i, ms] of time.sleeps.entries()) {
      assert.ok(ms >= 0 && ms < Math.min(1000, 100 * 2 ** i), `retry ${i}: ${ms}`);
    }
    assert.ok(retries.every((r) => r.source === 'backoff'));
  });

  it('does not retry other statuses unless told to', async () => {
    const time = createVirtualTime();
    const server = await scripted(time, [{ status: 500 }, { status: 500 }]);
    assert.equal((await clientOn(time).client.fetch(server.url)).status, 500);
    assert.equal((await clientOn(time, { retryOn: [500] }).client.fetch(server.url)).status, 200);
    assert.equal(server.arrivals.length, 3);
  });
});

describe('client: budgets', () => {
  const always429 = (n: number, retryAfter: string): ScriptedResponse[] =>
    Array.from({ length: n }, () => ({ status: 429, headers: { 'Retry-After': retryAfter } }));

  it('stops after `retries` retries and returns the last 429', async () => {
    const time = createVirtualTime();
    const server = await scripted(time, always429(10, '1'));
    const res = await clientOn(time, { retries: 3 }).client.fetch(server.url);
    assert.equal(res.status, 429);
    assert.equal(server.arrivals.length, 4);
    assert.deepEqual(time.sleeps, [1000, 1000, 1000]);
  });

  it('retries: 0 sends once; a per-request retries overrides the client', async () => {
    const time = createVirtualTime();
    const server = await scripted(time, always429(10, '1'));
    const { client } = clientOn(time, { retries: 0 });
    assert.equal((await client.fetch(server.url)).status, 429);
    assert.equal(server.arrivals.length, 1);
    assert.equal((await client.fetch(server.url, { retries: 2 })).status, 429);
    assert.equal(server.arrivals.length, 4);
  });

  it('never waits longer than maxWaitMs in total: a longer Retry-After is returned at once', async () => {
    const time = createVirtualTime();
    const server = await scripted(time, [...always429(1, '100'), ...always429(10, '2')]);
    const { client } = clientOn(time, { retries: 10, maxWaitMs: 5000 });
    const first = await client.fetch(server.url);
    assert.equal(first.status, 429);
    assert.equal(first.headers.get('retry-after'), '100');
    assert.deepEqual(time.sleeps, []);
    const second = await client.fetch(server.url);
    assert.equal(second.status, 429);
    assert.deepEqual(time.sleeps, [2000, 2000], 'a third wait of 2 s would pass the 5 s budget');
    assert.equal(server.arrivals.length, 4);
  });

  it('truncates backoff to what is left of maxWaitMs', async () => {
    const time = createVirtualTime();
    const server = await scripted(
      time,
      Array.from({ length: 20 }, () => ({ status: 503 })),
    );
    const { client } = clientOn(time, { retries: 20, maxWaitMs: 300, baseDelayMs: 200, random: () => 0.99 });
    assert.equal((await client.fetch(server.url)).status, 503);
    assert.deepEqual(time.sleeps, [198, 102]);
  });
});

describe('client: what is retried', () => {
  const once = (): ScriptedResponse[] => [{ status: 429, headers: { 'Retry-After': '1' } }];

  it('retries idempotent methods but not POST', async () => {
    for (const [method, expected] of [
      ['GET', 2],
      ['PUT', 2],
      ['DELETE', 2],
      ['POST', 1],
      ['PATCH', 1],
    ] as const) {
      const time = createVirtualTime();
      const server = await scripted(time, once());
      const res = await clientOn(time).client.fetch(server.url, { method, body: method === 'GET' ? null : 'x' });
      assert.equal(server.arrivals.length, expected, method);
      assert.equal(res.status, expected === 2 ? 200 : 429);
    }
  });

  it('retries POST when told to, or when it carries an Idempotency-Key, sending the same body', async () => {
    const time = createVirtualTime();
    const server = await scripted(time, [...once(), { status: 200 }, ...once()]);
    await clientOn(time, { retryMethods: ['GET', 'post'] }).client.fetch(server.url, { method: 'POST', body: 'one' });
    await clientOn(time).client.fetch(server.url, {
      method: 'POST',
      body: new URLSearchParams({ a: 'two' }),
      headers: { 'Idempotency-Key': 'k-1' },
    });
    assert.deepEqual(
      server.arrivals.map((a) => [a.method, a.status, a.body]),
      [
        ['POST', 429, 'one'],
        ['POST', 200, 'one'],
        ['POST', 429, 'a=two'],
        ['POST', 200, 'a=two'],
      ],
    );
  });

  it('does not retry a body that is a stream', async () => {
    const bodies = [() => new Blob(['stream']).stream(), () => Readable.from([Buffer.from('node stream')])];
    for (const body of bodies) {
      const time = createVirtualTime();
      const server = await scripted(time, once());
      const res = await clientOn(time).client.fetch(server.url, {
        method: 'PUT',
        body: body() as unknown as BodyInit,
        duplex: 'half',
      } as RequestInit);
      assert.equal(res.status, 429);
      assert.equal(server.arrivals.length, 1);
    }
  });

  it('retries a Request without a body, but not one with its own (stream) body', async () => {
    const time = createVirtualTime();
    const server = await scripted(time, [...once(), { status: 200 }, ...once()]);
    const { client } = clientOn(time);
    assert.equal((await client.fetch(new Request(server.url))).status, 200);
    assert.equal((await client.fetch(new Request(server.url, { method: 'PUT', body: 'x' }))).status, 429);
    assert.deepEqual(
      server.arrivals.map((a) => a.status),
      [429, 200, 429],
    );
  });
});

describe('client: abort', () => {
  it('an abort ends a Retry-After wait at once (real timers)', async () => {
    const time = createVirtualTime();
    const server = await scripted(time, [{ status: 429, headers: { 'Retry-After': '30' } }]);
    const client = createClient(); // the real sleep
    const controller = new AbortController();
    const started = performance.now();
    const pending = client.fetch(server.url, { signal: controller.signal });
    setTimeout(() => controller.abort(), 50);
    await assert.rejects(pending, { name: 'AbortError' });
    assert.ok(performance.now() - started < 5000, 'did not wait out the 30 s');
    assert.equal(server.arrivals.length, 1);
  });

  it('an abort ends a pacing wait at once, and an injected sleep cannot hold it', async () => {
    const time = createVirtualTime();
    const server = await scripted(time, []);
    const neverWakes = () => new Promise<void>(() => {});
    const client = createClient({ rate: { limit: 1, period: '1h' }, clock: time.clock, sleep: neverWakes });
    assert.equal((await client.fetch(server.url)).status, 200);
    const controller = new AbortController();
    const pending = client.fetch(server.url, { signal: controller.signal });
    setTimeout(() => controller.abort(new Error('gave up')), 20);
    await assert.rejects(pending, /gave up/);
    assert.equal(server.arrivals.length, 1);
  });

  it('an already aborted signal sends nothing', async () => {
    const time = createVirtualTime();
    const server = await scripted(time, []);
    await assert.rejects(createClient().fetch(server.url, { signal: AbortSignal.abort() }), { name: 'AbortError' });
    await assert.rejects(createClient({ rate: 5 }).fetch(server.url, { signal: AbortSignal.abort() }), {
      name: 'AbortError',
    });
    assert.equal(server.arrivals.length, 0);
  });
});

describe('client: pacing', () => {
  it('never sends faster than the rate: 30 concurrent calls reach a 10/s server without one 429', async () => {
    const time = createVirtualTime(1_000_000);
    const server = await startLimitedServer({
      clock: time.clock,
      limit: 10,
      periodMs: 1000,
      algorithm: 'token-bucket',
      burst: 1,
    });
    servers.push(server);
    const { client } = clientOn(time, { rate: { limit: 10, period: '1s' }, retries: 0 });
    const responses = await Promise.all(Array.from({ length: 30 }, () => client.fetch(server.url)));
    assert.deepEqual(
      responses.map((r) => r.status),
      new Array(30).fill(200),
    );
    const times = server.arrivals.map((a) => a.atMs - 1_000_000);
    assert.deepEqual(
      times,
      Array.from({ length: 30 }, (_, i) => i * 100),
    );
  });

  it('the same calls unpaced are refused (the test can fail)', async () => {
    const time = createVirtualTime(1_000_000);
    const server = await startLimitedServer({
      clock: time.clock,
      limit: 10,
      periodMs: 1000,
      algorithm: 'token-bucket',
      burst: 1,
    });
    servers.push(server);
    const { client } = clientOn(time, { retries: 0 });
    const responses = await Promise.all(Array.from({ length: 30 }, () => client.fetch(server.url)));
    assert.equal(responses.filter((r) => r.status === 429).length, 29);
  });

  it('paces retries too, and a burst goes back to back', async () => {
    const time = createVirtualTime(0);
    const server = await scripted(time, [{ status: 429, headers: { 'Retry-After': '0' } }]);
    const { client } = clientOn(time, { rate: { limit: 2, period: '1s', burst: 2 } });
    await client.fetch(server.url);
    await client.fetch(server.url);
    assert.deepEqual(
      server.arrivals.map((a) => a.atMs),
      [0, 0, 500],
    );
  });
});

describe('client: options', () => {
  for (const [options, code, pattern] of [
    [{ retries: -1 }, 'ERR_SLUICE_INVALID_OPTION', /retries: -1/],
    [{ maxWaitMs: 1.5 }, 'ERR_SLUICE_INVALID_OPTION', /maxWaitMs/],
    [{ retryOn: [42] }, 'ERR_SLUICE_INVALID_OPTION', /retryOn/],
    [{ retryMethods: 'GET' }, 'ERR_SLUICE_INVALID_OPTION', /retryMethods/],
    [{ rate: 0 }, 'ERR_SLUICE_INVALID_OPTION', /rate: 0/],
    [{ rate: { limit: 0, period: '1s' } }, 'ERR_SLUICE_INVALID_OPTION', /rate\.limit/],
    [{ rate: { limit: 5, period: 'soon' } }, 'ERR_SLUICE_INVALID_DURATION', /rate\.period/],
    [{ rate: { limit: 5, period: '1s', jitter: 1 } }, 'ERR_SLUICE_UNKNOWN_OPTION', /rate\.jitter/],
    [{ fetch: 'nope' }, 'ERR_SLUICE_INVALID_OPTION', /fetch/],
    [{ retry: 3 }, 'ERR_SLUICE_UNKNOWN_OPTION', /retry: unknown option/],
  ] as const) {
    it(`rejects ${JSON.stringify(options)} with ${code}`, () => {
      assert.throws(() => createClient(options as never), { code, message: pattern });
    });
  }

  it('rejects a bad per-request budget', async () => {
    await assert.rejects(createClient().fetch('http://127.0.0.1:1/', { retries: -2 }), {
      code: 'ERR_SLUICE_INVALID_OPTION',
    });
  });
});

describe('client: the headers sluice itself sends', () => {
  for (const headers of ['x', 'draft', 'both'] as const) {
    it(`without Retry-After, waits what the ${headers} headers of sluice/node say`, async () => {
      const time = createVirtualTime(1_000_000);
      const server = await startLimitedServer({
        clock: time.clock,
        limit: 1,
        periodMs: 5000,
        headers,
        withoutRetryAfter: true,
      });
      servers.push(server);
      const { client, retries } = clientOn(time);
      assert.equal((await client.fetch(server.url)).status, 200);
      const res = await client.fetch(server.url);
      assert.equal(res.status, 200);
      assert.equal(res.headers.get('retry-after'), null);
      assert.deepEqual(time.sleeps, [5000]);
      assert.equal(retries[0]?.source, headers === 'x' ? 'x-ratelimit-reset' : 'ratelimit');
    });
  }

  it('with headers: false and no Retry-After, falls back to backoff', async () => {
    const time = createVirtualTime(1_000_000);
    const server = await startLimitedServer({
      clock: time.clock,
      limit: 1,
      periodMs: 5000,
      headers: false,
      withoutRetryAfter: true,
    });
    servers.push(server);
    const { client, retries } = clientOn(time, { retries: 2, maxWaitMs: 1000 });
    await client.fetch(server.url);
    assert.equal((await client.fetch(server.url)).status, 429);
    assert.ok(retries.length > 0 && retries.every((r) => r.source === 'backoff'));
    assert.ok(time.sleeps.reduce((a, b) => a + b, 0) <= 1000);
  });
});
