/**
 * The adapter scenario suite: the same HTTP scenarios, over real connections (global fetch, port 0),
 * against every framework adapter — and against every store, since the environment can supply one.
 * Expected headers and bodies are written out exactly, so every framework must answer byte for byte
 * the same; every rate-limit header is also parsed as an RFC 9651 structured field.
 *
 * Time is a manual clock (windows start at a minute boundary, T0); shaping gets a `sleep` that only
 * records, so nothing here waits for real time.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createManualClock, type ManualClock } from '../../src/core/clock.js';
import type { LimitedEvent, RateLimitOptions } from '../../src/http/index.js';
import type { Store } from '../../src/stores/store.js';
import type { AdapterHarness, FrameworkSetup, Stack } from './harness.js';
import { type Item, parseList, parseSingleItem } from './structured-fields.js';

/** A minute boundary, so 1 s and 1 min windows both start here. */
export const T0 = 1_700_000_040_000;

/** Where counters live in a run of the suite; omitted = each middleware's own memory store. */
export interface SuiteStore {
  /** A store no other scenario shares (fresh, or under a fresh prefix), in client-clock mode. */
  create(): Promise<{ store: Store; close(): Promise<void> }>;
}

/** A response, read completely. */
export interface Reply {
  status: number;
  headers: Headers;
  body: string;
}

/** The headers sluice is responsible for. */
export const SLUICE_HEADERS = [
  'x-ratelimit-limit',
  'x-ratelimit-remaining',
  'x-ratelimit-reset',
  'ratelimit-policy',
  'ratelimit',
  'x-ratelimit-degraded',
  'retry-after',
] as const;

/** The sluice headers of a response (and the content type of a rejection), as a plain object. */
export function pick(reply: Reply): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of SLUICE_HEADERS) {
    const v = reply.headers.get(name);
    if (v !== null) out[name] = v;
  }
  if (reply.status >= 400) out['content-type'] = reply.headers.get('content-type') ?? '';
  return out;
}

/** The facts the headers state, after checking that the draft fields parse and agree with the X- ones. */
export function readHeaders(reply: Reply): {
  name: string;
  limit: number;
  remaining: number;
  resetS: number;
  windowS: number;
} {
  const policy = parseSingleItem(reply.headers.get('ratelimit-policy') ?? '');
  const state = parseSingleItem(reply.headers.get('ratelimit') ?? '');
  assert.equal(typeof policy.value, 'string', 'the policy name is an sf-string');
  assert.equal(state.value, policy.value, 'RateLimit names the policy of RateLimit-Policy');
  for (const [item, keys] of [
    [policy, ['q', 'w']],
    [state, ['r', 't']],
  ] as const) {
    assert.deepEqual([...item.params.keys()], keys);
    for (const k of keys) {
      const v = item.params.get(k);
      assert.ok(typeof v === 'number' && Number.isInteger(v) && v >= 0, `${k} is a non-negative sf-integer`);
    }
  }
  const facts = {
    name: policy.value as string,
    limit: policy.params.get('q') as number,
    windowS: policy.params.get('w') as number,
    remaining: state.params.get('r') as number,
    resetS: state.params.get('t') as number,
  };
  assert.equal(Number(reply.headers.get('x-ratelimit-limit')), facts.limit);
  assert.equal(Number(reply.headers.get('x-ratelimit-remaining')), facts.remaining);
  assert.equal(Number(reply.headers.get('x-ratelimit-reset')), facts.resetS);
  return facts;
}

/** One policy as the draft fields of a response state it. */
export interface PolicyFacts {
  name: string;
  q: number;
  /** The window; undefined for a concurrency limit. */
  w: number | undefined;
  r: number;
  /** Seconds until more quota; undefined for a concurrency limit. */
  t: number | undefined;
}

/**
 * Parses `RateLimit-Policy` and `RateLimit` as RFC 9651 Lists (the parser of these tests, not our
 * serializer): the two list the same policies in the same order, every parameter a non-negative
 * integer, `r` never above `q`, and the `X-RateLimit-*` fields are those of one of them.
 */
export function readHeaderLists(reply: Reply): PolicyFacts[] {
  const policies = parseList(reply.headers.get('ratelimit-policy') ?? '') as Item[];
  const states = parseList(reply.headers.get('ratelimit') ?? '') as Item[];
  assert.equal(states.length, policies.length, 'one RateLimit item per RateLimit-Policy item');
  const facts = policies.map((policy, i) => {
    const state = states[i] as Item;
    assert.equal(typeof policy.value, 'string', 'a policy name is an sf-string');
    assert.equal(state.value, policy.value, 'RateLimit names the policies of RateLimit-Policy, in order');
    const int = (item: Item, k: string) => {
      const v = item.params.get(k);
      assert.ok(typeof v === 'number' && Number.isInteger(v) && v >= 0, `${k} is a non-negative sf-integer`);
      return v;
    };
    // A concurrency limit (draft-11's quota unit "concurrent-requests") has no window and no reset.
    const concurrent = policy.params.get('qu') === 'concurrent-requests';
    const f = {
      name: policy.value as string,
      q: int(policy, 'q'),
      w: concurrent ? undefined : int(policy, 'w'),
      r: int(state, 'r'),
      t: concurrent ? undefined : int(state, 't'),
    };
    assert.ok(f.r <= f.q, `${f.name}: r=${f.r} never exceeds q=${f.q}`);
    return f;
  });
  const x = {
    q: Number(reply.headers.get('x-ratelimit-limit')),
    r: Number(reply.headers.get('x-ratelimit-remaining')),
    t: Number(reply.headers.get('x-ratelimit-reset')),
  };
  assert.ok(
    facts.some((f) => f.q === x.q && f.r === x.r && (f.t === x.t || f.t === undefined)),
    'X-RateLimit-* describe one of the listed policies',
  );
  return facts;
}

/** The exact sluice headers of a response under policy `name` (q, w) with `r` remaining and reset `t`. */
function expected(name: string, q: number, w: number, r: number, t: number, extra: Record<string, string> = {}) {
  return {
    'x-ratelimit-limit': String(q),
    'x-ratelimit-remaining': String(r),
    'x-ratelimit-reset': String(t),
    'ratelimit-policy': `"${name}";q=${q};w=${w}`,
    ratelimit: `"${name}";r=${r};t=${t}`,
    ...extra,
  };
}

/** The exact sluice headers when several policies apply: X- from `binding`, every policy listed. */
type Policy = [name: string, q: number, w: number, r: number, t: number];
function expectedList(binding: Policy, all: readonly Policy[], extra: Record<string, string> = {}) {
  const [, q, , r, t] = binding;
  return {
    'x-ratelimit-limit': String(q),
    'x-ratelimit-remaining': String(r),
    'x-ratelimit-reset': String(t),
    'ratelimit-policy': all.map(([n, pq, w]) => `"${n}";q=${pq};w=${w}`).join(', '),
    ratelimit: all.map(([n, , , pr, pt]) => `"${n}";r=${pr};t=${pt}`).join(', '),
    ...extra,
  };
}

function tooMany(retryAfter: number) {
  return {
    'retry-after': String(retryAfter),
    'content-type': 'application/json',
  };
}

function tooManyBody(retryAfter: number): string {
  const s = retryAfter === 1 ? '' : 's';
  return JSON.stringify({
    error: {
      code: 'RATE_LIMIT_EXCEEDED',
      message: `Too many requests; retry in ${retryAfter} second${s}.`,
      retry_after: retryAfter,
    },
  });
}

/** Options functions get the native request first; the suite only uses the neutral view. */
type Info = Parameters<NonNullable<RateLimitOptions<unknown>['key']>>[1];
const apiKey = (_req: unknown, info: Info) => info.header('x-api-key') ?? null;

/**
 * Registers the scenarios for one adapter.
 * @param label - names the store in test titles (e.g. `'memory'`, `'redis'`).
 */
export function runAdapterSuite(harness: AdapterHarness, label = 'memory', stores?: SuiteStore): void {
  /** Starts the server with `options` (+ the clock and store of the run), runs `body`, cleans up. */
  async function scenario(
    options: RateLimitOptions<unknown> | Stack,
    body: (
      get: (path?: string, headers?: Record<string, string>) => Promise<Reply>,
      clock: ManualClock,
    ) => Promise<void>,
    setup?: FrameworkSetup,
  ): Promise<void> {
    const clock = createManualClock(T0);
    const fixture = stores ? await stores.create() : undefined;
    const run = (o: RateLimitOptions<unknown>) => ({ clock, ...(fixture ? { store: fixture.store } : {}), ...o });
    const server = await harness.start(
      Array.isArray(options) ? options.map(run) : run(options as RateLimitOptions<unknown>),
      setup,
    );
    try {
      await body(async (path = '/', headers = {}) => {
        const res = await fetch(`${server.url}${path}`, { headers });
        return { status: res.status, headers: res.headers, body: await res.text() };
      }, clock);
    } finally {
      await server.close();
      await fixture?.close();
    }
  }

  describe(`${harness.name} adapter (${label} store)`, () => {
    it('limit 2: 200, 200, 429 with exact headers and body; the window resets', () =>
      scenario({ limit: 2, period: '1m' }, async (get, clock) => {
        const r1 = await get();
        assert.equal(r1.status, 200);
        assert.equal(r1.body, 'ok');
        assert.deepEqual(pick(r1), expected('default', 2, 60, 1, 60));
        const r2 = await get();
        assert.equal(r2.status, 200);
        assert.deepEqual(pick(r2), expected('default', 2, 60, 0, 60));
        clock.advance(15_000);
        const r3 = await get();
        assert.equal(r3.status, 429);
        assert.deepEqual(pick(r3), expected('default', 2, 60, 0, 45, tooMany(45)));
        assert.equal(r3.body, tooManyBody(45));
        for (const r of [r1, r2, r3]) readHeaders(r);
        clock.advance(45_000);
        const r4 = await get();
        assert.equal(r4.status, 200, 'a new window');
        assert.deepEqual(pick(r4), expected('default', 2, 60, 1, 60));
      }));

    it('keeps keys apart', () =>
      scenario({ limit: 1, period: '1s', key: apiKey, name: 'per-key' }, async (get) => {
        assert.equal((await get('/', { 'x-api-key': 'a' })).status, 200);
        assert.equal((await get('/', { 'x-api-key': 'a' })).status, 429);
        const b = await get('/', { 'x-api-key': 'b' });
        assert.equal(b.status, 200);
        assert.deepEqual(pick(b), expected('per-key', 1, 1, 0, 1));
        const none = await get('/');
        assert.equal(none.status, 200, 'a null key: counted under the client IP (missingKey: ip)');
        assert.deepEqual(pick(none), expected('per-key', 1, 1, 0, 1));
        assert.equal((await get('/')).status, 429, 'and that IP is now spent');
      }));

    it('missingKey: skip lets a keyless request through unlimited; reject answers 400', async () => {
      await scenario({ limit: 1, period: '1s', key: apiKey, missingKey: 'skip' }, async (get) => {
        for (let i = 0; i < 3; i++) {
          const r = await get('/');
          assert.equal(r.status, 200);
          assert.deepEqual(pick(r), {});
        }
      });
      await scenario({ limit: 1, period: '1s', key: apiKey, missingKey: 'reject' }, async (get) => {
        const r = await get('/');
        assert.equal(r.status, 400);
        assert.deepEqual(pick(r), { 'content-type': 'application/json' });
        assert.equal(
          r.body,
          JSON.stringify({
            error: {
              code: 'RATE_LIMIT_KEY_MISSING',
              message: 'This request lacks what identifies its client for rate limiting.',
              retry_after: null,
            },
          }),
        );
        assert.equal((await get('/', { 'x-api-key': 'a' })).status, 200);
      });
    });

    it('numbers are keys (a user id)', () =>
      scenario(
        { limit: 1, period: '1m', name: 'per-user', key: (_req, info) => Number(info.header('x-user') ?? 0) },
        async (get) => {
          const u = (id: string) => ({ 'x-user': id });
          const first = await get('/', u('42'));
          assert.equal(first.status, 200);
          assert.deepEqual(pick(first), expected('per-user', 1, 60, 0, 60));
          assert.equal((await get('/', u('42'))).status, 429);
          assert.equal((await get('/', u('7'))).status, 200, 'another user, another counter');
        },
      ));

    it('applies several limits all or nothing, describing the one closest to exhaustion', () =>
      scenario(
        {
          limits: [
            { name: 'per-ip', limit: 3, period: '1m' },
            { name: 'per-key', limit: 2, period: '1s', key: apiKey },
          ],
        },
        async (get, clock) => {
          const k = { 'x-api-key': 'k' };
          const ip = (r: number, t: number): Policy => ['per-ip', 3, 60, r, t];
          const key = (r: number, t: number): Policy => ['per-key', 2, 1, r, t];
          const r1 = await get('/', k);
          assert.deepEqual(pick(r1), expectedList(key(1, 1), [ip(2, 60), key(1, 1)]));
          assert.deepEqual(pick(await get('/', k)), expectedList(key(0, 1), [ip(1, 60), key(0, 1)]));
          const r3 = await get('/', k);
          assert.equal(r3.status, 429);
          assert.deepEqual(pick(r3), expectedList(key(0, 1), [ip(1, 60), key(0, 1)], tooMany(1)));
          assert.equal(r3.body, tooManyBody(1));
          for (const r of [r1, r3]) readHeaderLists(r);
          clock.advance(1000);
          // The rejected request took nothing from per-ip, so one place is left there.
          const r4 = await get('/', k);
          assert.equal(r4.status, 200);
          assert.deepEqual(pick(r4), expectedList(ip(0, 59), [ip(0, 59), key(1, 1)]));
          const r5 = await get('/');
          assert.equal(r5.status, 429, 'without a key, per-key counts the IP; per-ip is spent');
          assert.deepEqual(pick(r5), expectedList(ip(0, 59), [ip(0, 59), key(2, 0)], tooMany(59)));
        },
      ));

    it('stacked middlewares: a request the second rejects takes nothing from the first', () =>
      scenario(
        [
          { name: 'site', limit: 3, period: '1m' },
          { name: 'burst', limit: 1, period: '10s' },
        ],
        async (get, clock) => {
          const site = (r: number, t: number): Policy => ['site', 3, 60, r, t];
          const burst = (r: number, t: number): Policy => ['burst', 1, 10, r, t];
          const r1 = await get();
          assert.equal(r1.status, 200);
          assert.deepEqual(pick(r1), expectedList(burst(0, 10), [site(2, 60), burst(0, 10)]));
          for (let i = 0; i < 3; i++) {
            const over = await get();
            assert.equal(over.status, 429);
            assert.deepEqual(
              pick(over),
              expectedList(burst(0, 10), [site(2, 60), burst(0, 10)], tooMany(10)),
              'site still has 2 left: the rejected request was given back',
            );
          }
          clock.advance(10_000);
          const r5 = await get();
          assert.equal(r5.status, 200, 'once burst resets, site still has room (the 429s took none of it)');
          assert.deepEqual(pick(r5), expectedList(burst(0, 10), [site(1, 50), burst(0, 10)]));
        },
      ));

    it('limits as a function of the request (per plan)', () =>
      scenario(
        {
          key: apiKey,
          limit: (_req, info) => (info.header('x-plan') === 'paid' ? 4 : 2),
          period: '1m',
        },
        async (get) => {
          const free = { 'x-api-key': 'f', 'x-plan': 'free' };
          const paid = { 'x-api-key': 'p', 'x-plan': 'paid' };
          const codes = async (h: Record<string, string>, n: number) => {
            const out: number[] = [];
            for (let i = 0; i < n; i++) out.push((await get('/', h)).status);
            return out;
          };
          assert.deepEqual(await codes(free, 3), [200, 200, 429]);
          assert.deepEqual(await codes(paid, 5), [200, 200, 200, 200, 429]);
          assert.deepEqual(pick(await get('/', paid)), expected('default', 4, 60, 0, 60, tooMany(60)));
        },
      ));

    it('takes the cost of each request', () =>
      scenario({ limit: 5, period: '1m', cost: (_req, info) => Number(info.header('x-cost') ?? 1) }, async (get) => {
        assert.deepEqual(pick(await get('/', { 'x-cost': '3' })), expected('default', 5, 60, 2, 60));
        const over = await get('/', { 'x-cost': '3' });
        assert.equal(over.status, 429);
        assert.equal(pick(over)['x-ratelimit-remaining'], '2', 'a rejection takes nothing');
        assert.deepEqual(pick(await get('/', { 'x-cost': '0' })), expected('default', 5, 60, 2, 60));
        assert.deepEqual(pick(await get('/', { 'x-cost': '2' })), expected('default', 5, 60, 0, 60));
      }));

    it('answers a cost that can never fit with 429 and no Retry-After', () =>
      scenario({ limit: 2, period: '1m', cost: 3 }, async (get) => {
        const r = await get();
        assert.equal(r.status, 429);
        assert.equal(r.headers.get('retry-after'), null);
        assert.deepEqual(JSON.parse(r.body).error.retry_after, null);
        assert.equal(JSON.parse(r.body).error.code, 'RATE_LIMIT_EXCEEDED');
      }));

    it('skips what skip says, without counting or headers', () =>
      scenario({ limit: 1, period: '1m', skip: (_req, info) => info.path === '/health' }, async (get) => {
        for (let i = 0; i < 3; i++) {
          const h = await get('/health?x=1');
          assert.equal(h.status, 200);
          assert.deepEqual(pick(h), {});
        }
        assert.equal((await get()).status, 200);
        assert.equal((await get()).status, 429);
      }));

    it('allow list: IPs and CIDRs are never limited nor counted', () =>
      scenario({ limit: 1, period: '1m', allow: ['10.0.0.0/8', '127.0.0.1'] }, async (get) => {
        for (let i = 0; i < 3; i++) {
          const r = await get();
          assert.equal(r.status, 200);
          assert.deepEqual(pick(r), {});
        }
      }));

    it('allow and deny lists of keys; deny answers 403', () =>
      scenario({ limit: 1, period: '1m', key: apiKey, allow: ['vip'], deny: ['banned'] }, async (get) => {
        for (let i = 0; i < 3; i++) assert.equal((await get('/', { 'x-api-key': 'vip' })).status, 200);
        const denied = await get('/', { 'x-api-key': 'banned' });
        assert.equal(denied.status, 403);
        assert.deepEqual(pick(denied), { 'content-type': 'application/json' });
        assert.equal(
          denied.body,
          JSON.stringify({ error: { code: 'ACCESS_DENIED', message: 'Access denied.', retry_after: null } }),
        );
        assert.equal((await get('/', { 'x-api-key': 'other' })).status, 200);
        assert.equal((await get('/', { 'x-api-key': 'other' })).status, 429);
      }));

    it('deny list of CIDRs (IPv4-mapped IPv6 too)', () =>
      scenario({ limit: 5, period: '1m', deny: ['::ffff:127.0.0.0/104'] }, async (get) => {
        assert.equal((await get()).status, 403);
      }));

    it('shadow mode counts and reports but never rejects, and sends no headers', async () => {
      const events: LimitedEvent<unknown>[] = [];
      await scenario({ limit: 1, period: '1m', shadow: true, onLimited: (e) => events.push(e) }, async (get) => {
        for (let i = 0; i < 3; i++) {
          const r = await get();
          assert.equal(r.status, 200);
          assert.deepEqual(pick(r), {});
        }
      });
      assert.equal(events.length, 2);
      assert.ok(events.every((e) => e.shadow && e.limitName === 'default' && !e.decision.allowed));
      assert.equal(events[0]?.ip, '127.0.0.1');
    });

    it('shape mode holds requests for their turn, then passes; beyond maxDelayMs it rejects', async () => {
      const slept: number[] = [];
      await scenario(
        {
          mode: 'shape',
          limit: 2,
          period: '1s',
          burst: 4,
          maxDelayMs: 600,
          sleep: async (ms) => {
            slept.push(ms);
          },
        },
        async (get, clock) => {
          const r1 = await get();
          assert.equal(r1.status, 200);
          assert.equal(readHeaders(r1).name, 'default');
          assert.equal((await get()).status, 200);
          assert.deepEqual(slept, [500], 'the second request waits one emission interval');
          const r3 = await get();
          assert.equal(r3.status, 429, 'its turn would come after 1000 ms > maxDelayMs');
          assert.deepEqual(
            pick(r3),
            expected('default', 4, 2, 0, 1, tooMany(1)),
            'q is the queue (burst) 4, drained in 2 s',
          );
          clock.advance(500);
          // The rejected request gave its place back: one request is still queued, so 500 ms to wait.
          assert.equal((await get()).status, 200);
          assert.deepEqual(slept, [500, 500]);
        },
      );
    });

    it('headers: x, draft and false', async () => {
      await scenario({ limit: 2, period: '1m', headers: 'x' }, async (get) => {
        assert.deepEqual(pick(await get()), {
          'x-ratelimit-limit': '2',
          'x-ratelimit-remaining': '1',
          'x-ratelimit-reset': '60',
        });
      });
      await scenario({ limit: 2, period: '1m', headers: 'draft' }, async (get) => {
        assert.deepEqual(pick(await get()), {
          'ratelimit-policy': '"default";q=2;w=60',
          ratelimit: '"default";r=1;t=60',
        });
      });
      await scenario({ limit: 1, period: '1m', headers: false }, async (get) => {
        assert.deepEqual(pick(await get()), {});
        assert.deepEqual(pick(await get()), tooMany(60), 'Retry-After is part of the 429, not of the headers option');
      });
    });

    it('custom message, body and status', async () => {
      await scenario({ limit: 1, period: '1m', message: 'Slow down.' }, async (get) => {
        await get();
        assert.equal(JSON.parse((await get()).body).error.message, 'Slow down.');
      });
      await scenario(
        { limit: 1, period: '1m', statusCode: 503, body: (info) => ({ wait: info.retryAfter, kind: info.kind }) },
        async (get) => {
          await get();
          const r = await get();
          assert.equal(r.status, 503);
          assert.deepEqual(JSON.parse(r.body), { wait: 60, kind: 'limited' });
          assert.equal(r.headers.get('content-type'), 'application/json');
        },
      );
    });

    const noTrustSetting = harness.hasTrustSetting ? false : 'the framework has no trust-proxy setting of its own';

    it("behind a proxy: the framework's own trust setting is honoured", { skip: noTrustSetting }, async () => {
      const ips: string[] = [];
      await scenario(
        { limit: 1, period: '1m', onLimited: (e) => ips.push(e.ip) },
        async (get) => {
          const xff = (v: string) => ({ 'x-forwarded-for': v });
          // Three clients behind the proxy (the loopback peer), told apart as the framework does.
          for (const client of ['203.0.113.1', '203.0.113.2', '203.0.113.3']) {
            assert.equal((await get('/', xff(client))).status, 200, client);
          }
          assert.equal(
            (await get('/', xff('198.51.100.9, 203.0.113.2'))).status,
            429,
            'one hop trusted: the right-most',
          );
        },
        { trustProxy: 1 },
      );
      assert.deepEqual(ips, ['203.0.113.2']);
    });

    it("behind a proxy: sluice's own trustProxy wins over the framework's", { skip: noTrustSetting }, () =>
      scenario(
        { limit: 1, period: '1m', trustProxy: false },
        async (get) => {
          assert.equal((await get('/', { 'x-forwarded-for': '203.0.113.1' })).status, 200);
          assert.equal((await get('/', { 'x-forwarded-for': '203.0.113.2' })).status, 429, 'both are the peer');
        },
        { trustProxy: 1 },
      ),
    );

    it('trust proxy: a spoofed X-Forwarded-For from an untrusted peer does not change the key', () =>
      scenario({ limit: 1, period: '1m' }, async (get) => {
        assert.equal((await get('/', { 'x-forwarded-for': '203.0.113.1' })).status, 200);
        assert.equal((await get('/', { 'x-forwarded-for': '203.0.113.2' })).status, 429);
      }));

    it('trust proxy: from a trusted peer the right-most untrusted hop is the key', async () => {
      const ips: string[] = [];
      await scenario(
        {
          limit: 1,
          period: '1m',
          trustProxy: ['loopback', '10.0.0.0/8'],
          onLimited: (e) => ips.push(e.ip),
        },
        async (get) => {
          const xff = (v: string) => ({ 'x-forwarded-for': v });
          assert.equal((await get('/', xff('203.0.113.1'))).status, 200);
          assert.equal((await get('/', xff('203.0.113.2'))).status, 200);
          // The client made up the left-most entry; our proxy (10.1.1.1) recorded the real one.
          assert.equal((await get('/', xff('198.51.100.9, 203.0.113.1, 10.1.1.1'))).status, 429);
          assert.equal(
            (await get('/', xff('::ffff:203.0.113.2'))).status,
            429,
            'an IPv4-mapped hop is the IPv4 client',
          );
        },
      );
      assert.deepEqual(ips, ['203.0.113.1', '203.0.113.2']);
    });

    it('trust proxy: IPv6 clients in one /56 share a key; Forwarded when configured', () =>
      scenario(
        { limit: 1, period: '1m', trustProxy: '127.0.0.1', proxyHeader: 'forwarded', key: (_r, info) => info.ipKey },
        async (get) => {
          const fwd = (v: string) => ({ forwarded: v });
          assert.equal((await get('/', fwd('for="[2001:db8:0:100::1]:4711"'))).status, 200);
          assert.equal((await get('/', fwd('for="[2001:db8:0:1ff:ffff::2]"'))).status, 429, 'same /56');
          assert.equal((await get('/', fwd('for="[2001:db8:0:200::1]";proto=https'))).status, 200, 'next /56');
          // X-Forwarded-For is not the configured header: ignored, so the key is the peer 127.0.0.1.
          assert.equal((await get('/', { 'x-forwarded-for': '2001:db8:1::1' })).status, 200);
          assert.equal((await get('/', { 'x-forwarded-for': '2001:db8:2::1' })).status, 429);
        },
      ));
  });
}
