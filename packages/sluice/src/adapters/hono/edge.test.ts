/**
 * The edge build of `sluice/hono` against the full one: the same random traces through real Hono apps give the same
 * responses, headers and `c.get('rateLimit')`; store failures, controls and option errors behave alike; options the
 * edge build does not carry name `sluice/hono/full`; and a bundler picks the edge build only under the edge conditions.
 */
import assert from 'node:assert/strict';
import { dirname, join } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { type Context, Hono, type MiddlewareHandler } from 'hono';
import { seededRandom } from '../../../../../test/helpers/seeded-random.js';
import { createManualClock, type ManualClock } from '../../core/clock.js';
import type { RateLimitControls, RateLimitInfo } from '../../http/index.js';
import type { LimitedEvent } from '../../http/options.js';
import { createMemoryStore } from '../../stores/memory/memory-store.js';
import type { Store } from '../../stores/store.js';
import { rateLimit as fullLimit, type HonoRateLimitOptions } from '../hono.js';
import { rateLimit as edgeLimit } from './edge.js';

type Factory = (options: HonoRateLimitOptions) => MiddlewareHandler & RateLimitControls;
type Options = Omit<HonoRateLimitOptions, 'clock' | 'peerAddress'>;

const HEADERS = [
  'x-ratelimit-limit',
  'x-ratelimit-remaining',
  'x-ratelimit-reset',
  'x-ratelimit-degraded',
  'ratelimit',
  'ratelimit-policy',
  'retry-after',
  'content-type',
];

/** What the handler sees of `c.get('rateLimit')` (its getters; `resetTime` reads the wall clock, so not it). */
function seen(info: RateLimitInfo | undefined): unknown {
  if (info === undefined) return null;
  const { name, limit, remaining, used, resetMs, allowed, retryAfterMs, key, decision, limits } = info;
  return JSON.parse(
    JSON.stringify({ name, limit, remaining, used, resetMs, allowed, retryAfterMs, key, decision, limits }),
  );
}

/** A Hono app with the given middlewares in order, a handler that echoes what sluice decided. */
function appOf(...middlewares: MiddlewareHandler[]): Hono {
  const app = new Hono();
  for (const m of middlewares) app.use(m);
  app.all('*', (c) => c.json({ path: c.req.path, rateLimit: seen(c.get('rateLimit')) }));
  return app;
}

/** The options every middleware here gets: the manual clock and the address from a test header. */
function withTest(options: Options, clock: ManualClock): HonoRateLimitOptions {
  return { ...options, clock, peerAddress: (c: Context) => c.req.header('x-test-ip') };
}

/** One request of a trace. */
interface Step {
  readonly advanceMs: number;
  readonly path: string;
  readonly headers: Record<string, string>;
}

const IPS = ['192.0.2.1', '192.0.2.7', '2001:db8:0:100::1', '2001:db8:0:1ff::2', '2001:db8:0:200::9'];

function pickOf<T>(next: () => number, items: readonly T[]): T {
  return items[Math.floor(next() * items.length)] as T;
}

/** A seeded trace: a few clients (two IPv6 ones in one /56), time moving by random steps, sometimes extra headers. */
function traceOf(seed: number, length = 200): Step[] {
  const next = seededRandom(seed);
  const steps: Step[] = [];
  for (let i = 0; i < length; i++) {
    const headers: Record<string, string> = { 'x-test-ip': pickOf(next, IPS) };
    if (next() < 0.5) headers['x-user'] = pickOf(next, ['ann', 'bob', 'cy']);
    if (next() < 0.4) headers['x-cost'] = String(pickOf(next, [0, 1, 2, 3, 7, 1000]));
    if (next() < 0.4) headers['x-plan'] = pickOf(next, ['free', 'paid']);
    const advanceMs = next() < 0.6 ? 0 : Math.floor(next() * pickOf(next, [50, 1_000, 20_000]));
    steps.push({ advanceMs, path: pickOf(next, ['/a', '/b', '/inner']), headers });
  }
  return steps;
}

/** Everything a client sees of a response, and what the handler saw. */
async function observed(app: Hono, step: Step): Promise<unknown> {
  const res = await app.request(step.path, { headers: step.headers });
  const headers = Object.fromEntries(HEADERS.map((h) => [h, res.headers.get(h)]));
  return { status: res.status, body: await res.text(), headers };
}

/** Runs one trace through two apps on one clock, asserts each response is the same; the statuses seen. */
async function sameTrace(clock: ManualClock, full: Hono, edge: Hono, seed: number): Promise<Set<number>> {
  const statuses = new Set<number>();
  for (const [i, step] of traceOf(seed).entries()) {
    clock.advance(step.advanceMs);
    const expected = await observed(full, step);
    const actual = await observed(edge, step);
    assert.deepEqual(actual, expected, `seed ${seed}, request ${i}: ${JSON.stringify(step)}`);
    statuses.add((expected as { status: number }).status);
  }
  return statuses;
}

/**
 * The full and the edge middleware of the same options, each on its own store (a new memory store unless `store`
 * says otherwise), over one trace that has both passed and rejected requests (else it compared little).
 */
async function differential(options: Options, seed = 1, store: () => Store | undefined = createMemoryStore) {
  const clock = createManualClock(1_700_000_000_000);
  const make = (factory: Factory) => {
    const s = store();
    return factory(withTest(s === undefined ? options : { ...options, store: s }, clock));
  };
  const statuses = await sameTrace(clock, appOf(make(fullLimit)), appOf(make(edgeLimit)), seed);
  assert.ok(statuses.has(200) && statuses.size > 1, `seed ${seed}: only ${[...statuses].join(', ')}`);
}

const userKey = (c: Context) => c.req.header('x-user');
const costOf = (c: Context) => Number(c.req.header('x-cost') ?? 1);

describe('sluice/hono edge build: the same answers as the full middleware', () => {
  const algorithms: Options[] = [
    { algorithm: 'fixed-window', limit: 5, period: '10s' },
    { algorithm: 'sliding-window', limit: 5, period: '10s' },
    { algorithm: 'sliding-log', limit: 4, period: '5s' },
    { algorithm: 'token-bucket', limit: 3, period: '2s', burst: 6 },
    { algorithm: 'leaky-bucket', limit: 4, period: '4s' },
    { algorithm: 'gcra', limit: 5, period: '5s', burst: 3 },
  ];
  for (const options of algorithms)
    it(`${options.algorithm} inline`, async () => {
      for (const seed of [1, 2, 3]) await differential(options, seed);
    });

  it('two named limits: one keyed by a header and rejecting a missing key, one skipping it', async () => {
    await differential({
      limits: [
        { name: 'per-ip', limit: 6, period: '10s' },
        { name: 'per-user', limit: 3, period: '5s', key: userKey, missingKey: 'reject' },
      ],
    });
    await differential({
      limits: [
        { name: 'burst', algorithm: 'token-bucket', limit: 2, period: '1s', burst: 4 },
        { name: 'per-user', limit: 4, period: '20s', key: userKey, missingKey: 'skip' },
      ],
    });
  });

  it('a limit that is a function of the request', async () => {
    await differential({ limit: (c: Context) => (c.req.header('x-plan') === 'paid' ? 10 : 3), period: '10s' });
  });

  it('a cost that is a function of the request (0 looks without taking; over capacity is refused)', async () => {
    await differential({ algorithm: 'token-bucket', limit: 5, period: '5s', burst: 8, cost: costOf });
    await differential({ limit: 6, period: '10s', cost: costOf }, 4);
  });

  // A request during the block must not extend it: the block ends blockDuration after the rejection that set it.
  it('blockDuration', async () => {
    await differential({ limit: 3, period: '5s', blockDuration: '30s' });
    await differential({ algorithm: 'token-bucket', limit: 2, period: '2s', blockDuration: '10s' }, 7);
  });

  it('name, headers and the rejection', async () => {
    await differential({ name: 'api', limit: 3, period: '5s', key: userKey });
    await differential({ limit: 3, period: '5s', headers: 'x' });
    await differential({ limit: 3, period: '5s', headers: 'draft' });
    await differential({ limit: 3, period: '5s', headers: false });
    await differential({ limit: 2, period: '5s', statusCode: 503, message: 'Slow down.' });
    await differential({ limit: 2, period: '5s', message: (r) => `over ${r.limitName} (${r.retryAfter}s)` });
  });

  // Each side's own default store: the full build's memory store, the edge build's compact one.
  it('without a store option', async () => {
    for (const options of algorithms) await differential(options, 8, () => undefined);
    await differential(
      {
        limits: [
          { name: 'a', limit: 4, period: '3s', blockDuration: '10s' },
          { limit: 9, period: '1m' },
        ],
      },
      9,
      () => undefined,
    );
  });

  it('shadow: passes everything, with the same onLimited events', async () => {
    const clock = createManualClock(1_700_000_000_000);
    const events: { full: unknown[]; edge: unknown[] } = { full: [], edge: [] };
    const make = (factory: Factory, side: 'full' | 'edge') =>
      factory(
        withTest(
          {
            limit: 3,
            period: '5s',
            shadow: true,
            store: createMemoryStore(),
            onLimited: (e: LimitedEvent<Context>) => events[side].push({ ...e, req: e.req.req.path }),
          },
          clock,
        ),
      );
    await sameTrace(clock, appOf(make(fullLimit, 'full')), appOf(make(edgeLimit, 'edge')), 5);
    assert.ok(events.full.length > 0);
    assert.deepEqual(events.edge, events.full);
  });
});

/** Outer 6 per minute; inner 2 per minute, only on /inner: an inner rejection gives back the outer's unit. */
function stackedApp(outer: Factory, inner: Factory, clock: ManualClock): Hono {
  const store = () => createMemoryStore();
  return appOf(
    outer(withTest({ name: 'outer', limit: 6, period: '1m', store: store() }, clock)),
    inner(
      withTest(
        { name: 'inner', limit: 2, period: '1m', store: store(), skip: (c: Context) => c.req.path !== '/inner' },
        clock,
      ),
    ),
  );
}

describe('stacked middlewares: a request the inner one rejects consumes nothing of the outer one', () => {
  for (const [label, outer, inner] of [
    ['edge + edge', edgeLimit, edgeLimit],
    ['full outer + edge inner', fullLimit, edgeLimit],
  ] as const)
    it(label, async () => {
      const clock = createManualClock(1_700_000_000_000);
      await sameTrace(clock, stackedApp(fullLimit, fullLimit, clock), stackedApp(outer, inner, clock), 6);
      // A fresh pair: 2 pass /inner, 5 are refused by it; the outer still has 6 - 2 = 4 left.
      const app = stackedApp(outer, inner, clock);
      clock.advance(120_000);
      const headers = { 'x-test-ip': '198.51.100.1' };
      const statuses: number[] = [];
      for (let i = 0; i < 7; i++) statuses.push((await app.request('/inner', { headers })).status);
      assert.deepEqual(statuses, [200, 200, 429, 429, 429, 429, 429]);
      const res = await app.request('/a', { headers });
      assert.equal(res.status, 200);
      assert.equal(res.headers.get('x-ratelimit-remaining'), '3');
    });
});

/**
 * A memory store whose check and checkMany fail the way a broken network store does (a plain Error). Not synchronous:
 * the full middleware's fast path takes a synchronous store for one that cannot be unavailable (http/fast-path.ts).
 */
function brokenStore(): Store {
  const fail = () => {
    throw new Error('connection refused');
  };
  return { ...createMemoryStore(), synchronous: false, check: fail, checkMany: fail };
}

describe('a failing store', () => {
  for (const fail of [undefined, 'closed'] as const)
    it(`fail: ${fail ?? "'open' (the default)"} answers as the full middleware does`, async () => {
      const clock = createManualClock(1_700_000_000_000);
      const make = (factory: Factory) =>
        appOf(factory(withTest({ limit: 2, period: '1m', store: brokenStore(), ...(fail ? { fail } : {}) }, clock)));
      const full = make(fullLimit);
      const edge = make(edgeLimit);
      const step = { advanceMs: 0, path: '/a', headers: { 'x-test-ip': '192.0.2.1' } };
      const expected = (await observed(full, step)) as { status: number; headers: Record<string, string | null> };
      if (fail === 'closed') {
        assert.equal(expected.status, 503);
        assert.notEqual(expected.headers['retry-after'], null);
      } else {
        assert.equal(expected.status, 200);
        assert.equal(expected.headers['x-ratelimit-degraded'], '1');
      }
      assert.deepEqual(await observed(edge, step), expected);
    });
});

/** Sends `count` requests from one address; their statuses. */
async function statuses(app: Hono, ip: string, count: number): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < count; i++) out.push((await app.request('/a', { headers: { 'x-test-ip': ip } })).status);
  return out;
}

describe('controls: resetKey, penalty and block', () => {
  for (const [label, factory] of [
    ['full', fullLimit],
    ['edge', edgeLimit],
  ] as const)
    it(`${label}: the documented behaviour`, async () => {
      const clock = createManualClock(1_700_000_000_000);
      const limiter = factory(withTest({ limit: 3, period: '1m', store: createMemoryStore() }, clock));
      const app = appOf(limiter);
      assert.deepEqual(await statuses(app, '192.0.2.1', 4), [200, 200, 200, 429]);
      await limiter.resetKey('192.0.2.1');
      assert.deepEqual(await statuses(app, '192.0.2.1', 1), [200]);
      await limiter.penalty('192.0.2.1', 2);
      assert.deepEqual(await statuses(app, '192.0.2.1', 1), [429]);
      await limiter.block('192.0.2.2', '5m');
      const blocked = await app.request('/a', { headers: { 'x-test-ip': '192.0.2.2' } });
      assert.equal(blocked.status, 429);
      assert.equal(blocked.headers.get('retry-after'), '300');
      clock.advance(4 * 60_000);
      assert.deepEqual(await statuses(app, '192.0.2.2', 1), [429], 'still blocked after 4 of its 5 minutes');
      clock.advance(60_001);
      assert.deepEqual(await statuses(app, '192.0.2.2', 1), [200], 'free once the block is over');
    });

  it('the same responses on both after the same controls', async () => {
    const clock = createManualClock(1_700_000_000_000);
    const make = (factory: Factory) =>
      factory(withTest({ limit: 3, period: '1m', store: createMemoryStore(), key: userKey }, clock));
    const full = make(fullLimit);
    const edge = make(edgeLimit);
    const [fullApp, edgeApp] = [appOf(full), appOf(edge)];
    const compare = async (user: string) => {
      const step = { advanceMs: 0, path: '/a', headers: { 'x-test-ip': '192.0.2.1', 'x-user': user } };
      assert.deepEqual(await observed(edgeApp, step), await observed(fullApp, step), `user ${user}`);
    };
    for (const limiter of [full, edge]) await limiter.penalty('ann', 2);
    await compare('ann');
    await compare('ann');
    for (const limiter of [full, edge]) await limiter.resetKey('ann');
    await compare('ann');
    for (const limiter of [full, edge]) await limiter.block('bob', '90s');
    await compare('bob');
    clock.advance(60_000);
    await compare('bob');
    clock.advance(30_001);
    await compare('bob');
  });
});

/** The code and message a factory throws with, or undefined when it does not throw. */
function thrown(factory: Factory, options: Record<string, unknown>): { code: unknown; message: string } | undefined {
  try {
    factory({ peerAddress: () => '192.0.2.1', ...options } as HonoRateLimitOptions);
    return undefined;
  } catch (error) {
    return { code: (error as { code?: unknown }).code, message: (error as Error).message };
  }
}

const FULL_ONLY: Record<string, unknown> = {
  rules: {},
  insuranceShare: 0.5,
  allow: ['10.0.0.1'],
  deny: ['10.0.0.2'],
  concurrency: 2,
  maxDelayMs: 1000,
  sleep: async () => {},
  xRateLimitReset: 'seconds',
  body: () => ({}),
  trustProxy: true,
  proxyHeader: 'x-real-ip',
  skipSuccessfulRequests: true,
  skipFailedRequests: true,
  requestWasSuccessful: () => true,
  responseCost: () => 1,
  adaptive: {},
  tokenBudget: {},
};

describe('options', () => {
  const base = { limit: 5, period: '1m' };
  it('every option only the full build has names sluice/hono/full', () => {
    const cases: Record<string, unknown>[] = [
      ...Object.entries(FULL_ONLY).map(([name, value]) => ({ ...base, [name]: value })),
      { ...base, mode: 'shape' },
      { ...base, fail: 'insurance' },
      { limits: [() => ({ limit: 1, period: '1s' })] },
    ];
    for (const options of cases) {
      const error = thrown(edgeLimit, options);
      assert.equal(error?.code, 'ERR_SLUICE_EDGE_OPTION', JSON.stringify(Object.keys(options)));
      assert.match(error.message, /sluice\/hono\/full/);
    }
  });

  it('an unknown option is ERR_SLUICE_UNKNOWN_OPTION on both', () => {
    for (const name of ['windowMs', 'max']) {
      assert.equal(thrown(fullLimit, { ...base, [name]: 1000 })?.code, 'ERR_SLUICE_UNKNOWN_OPTION');
      assert.equal(thrown(edgeLimit, { ...base, [name]: 1000 })?.code, 'ERR_SLUICE_UNKNOWN_OPTION');
    }
  });

  it('bad values throw the same codes as the full middleware', () => {
    const cases: Record<string, unknown>[] = [
      { limit: -1, period: '1m' },
      { limit: 5, period: 'x' },
      { ...base, headers: 'y' },
      { ...base, statusCode: 200 },
      { ...base, ipv6Subnet: 200 },
    ];
    for (const options of cases) {
      const expected = thrown(fullLimit, options);
      assert.match(String(expected?.code), /^ERR_SLUICE_/, JSON.stringify(options));
      assert.equal(thrown(edgeLimit, options)?.code, expected?.code, JSON.stringify(options));
    }
  });
});

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '../../../../..');

/** Bundles `import { rateLimit } from 'sluice/hono'` from the repository root under the given conditions. */
async function bundle(conditions: string[]): Promise<string> {
  const result = await build({
    stdin: { contents: "export { rateLimit } from 'sluice/hono';", resolveDir: ROOT, loader: 'ts' },
    bundle: true,
    write: false,
    format: 'esm',
    platform: 'browser',
    conditions,
    external: ['hono', 'hono/*'],
    logLevel: 'silent',
  });
  return result.outputFiles[0]?.text ?? '';
}

// A message only the full build carries (http/migration-hints.ts), and the edge build's pointer to the full one.
const FULL_ONLY_TEXT = 'sluice validates every option when rateLimit() is called';
const EDGE_ONLY_TEXT = "import { rateLimit } from 'sluice/hono/full'";

describe('which build sluice/hono resolves to', () => {
  it('the edge build under workerd/worker', async () => {
    const text = await bundle(['workerd', 'worker', 'sluice-source']);
    assert.ok(text.includes(EDGE_ONLY_TEXT), 'the edge build');
    assert.ok(!text.includes(FULL_ONLY_TEXT), 'not the full build');
  });

  it('the full build elsewhere', async () => {
    const text = await bundle(['sluice-source']);
    assert.ok(text.includes(FULL_ONLY_TEXT), 'the full build');
    assert.ok(!text.includes(EDGE_ONLY_TEXT), 'not the edge build');
  });
});
