import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createManualClock } from '../core/clock.js';
import { isSluiceError } from '../core/errors.js';
import { createMemoryStore } from '../stores/memory/memory-store.js';
import { createAccessList } from './access-list.js';
import { createHttpLimiter, type HttpOutcome } from './http-limiter.js';
import type { RateLimitOptions } from './options.js';
import type { RequestAccess } from './request.js';

/** A request as plain data: the core reads it through `access`, as an adapter would. */
interface FakeRequest {
  peer?: string;
  method?: string;
  url?: string;
  headers?: Record<string, string>;
}

const access: RequestAccess<FakeRequest> = {
  peer: (r) => r.peer ?? '192.0.2.1',
  header: (r, name) => r.headers?.[name],
  method: (r) => r.method ?? 'GET',
  url: (r) => r.url ?? '/',
  headers: (r) => r.headers ?? {},
};

const T0 = 1_700_000_040_000;

function limiter(options: RateLimitOptions<FakeRequest>) {
  return createHttpLimiter({ clock: createManualClock(T0), ...options }, access);
}

const header = (o: HttpOutcome, name: string) => {
  const i = o.headers.indexOf(name);
  return i === -1 ? undefined : o.headers[i + 1];
};

function throwsCode(fn: () => unknown, code: string, option: string) {
  assert.throws(fn, (e: unknown) => {
    assert.ok(isSluiceError(e), `a SluiceError, got ${String(e)}`);
    assert.equal(e.code, code);
    assert.equal(e.option, option);
    return true;
  });
}

describe('createHttpLimiter', () => {
  it('decides synchronously on the memory store when nothing is async', () => {
    const l = limiter({ limit: 1, period: '1s' });
    const first = l.decide({});
    assert.ok(!(first instanceof Promise));
    assert.equal(first.pass, true);
    const second = l.decide({});
    assert.ok(!(second instanceof Promise));
    assert.equal(second.pass, false);
    assert.equal(second.status, 429);
  });

  it('awaits options that return promises', async () => {
    const l = limiter({
      limit: 1,
      period: '1s',
      key: async (_r, info) => info.header('x-user') ?? null,
      skip: async (_r, info) => info.path === '/skip',
      cost: async () => 1,
    });
    assert.equal((await l.decide({ headers: { 'x-user': 'a' } })).pass, true);
    assert.equal((await l.decide({ headers: { 'x-user': 'a' } })).pass, false);
    assert.equal((await l.decide({ headers: { 'x-user': 'b' } })).pass, true);
    assert.equal((await l.decide({ url: '/skip?x', headers: { 'x-user': 'a' } })).pass, true);
    const keyless = await l.decide({});
    assert.equal(keyless.pass, true);
    assert.equal(header(keyless, 'x-ratelimit-remaining'), '0', 'a missing key counts under the client IP');
    assert.equal((await l.decide({})).status, 429);
  });

  it('missingKey: ip (default), skip (warned once), reject (400); numbers are keys', async () => {
    const warnings: string[] = [];
    const onWarning = (w: Error & { code?: string }) => {
      if (w.code !== undefined) warnings.push(w.code);
    };
    process.on('warning', onWarning);
    try {
      const byUser = (missingKey?: 'ip' | 'skip' | 'reject') =>
        limiter({
          limit: 1,
          period: '1m',
          key: (_r, info) => (info.header('x-user') === undefined ? null : Number(info.header('x-user'))),
          ...(missingKey === undefined ? {} : { missingKey }),
        });
      const numeric = byUser();
      assert.equal((numeric.decide({ headers: { 'x-user': '42' } }) as HttpOutcome).pass, true);
      assert.equal((numeric.decide({ headers: { 'x-user': '42' } }) as HttpOutcome).status, 429, 'user 42 counted');
      assert.equal((numeric.decide({ headers: { 'x-user': '7' } }) as HttpOutcome).pass, true, 'user 7 apart');
      assert.equal((numeric.decide({}) as HttpOutcome).pass, true, 'no user: the IP');
      assert.equal((numeric.decide({}) as HttpOutcome).status, 429, 'and the IP is now spent');

      const skip = byUser('skip');
      for (let i = 0; i < 3; i++) assert.deepEqual((skip.decide({}) as HttpOutcome).headers, []);

      const reject = byUser('reject');
      const r = reject.decide({}) as HttpOutcome;
      assert.equal(r.status, 400);
      assert.equal(JSON.parse(r.body).error.code, 'RATE_LIMIT_KEY_MISSING');
      assert.equal(r.rejection?.limitName, 'default');
      await new Promise((resolve) => setImmediate(resolve));
      assert.deepEqual(
        warnings.filter((w) => w === 'SLUICE_MISSING_KEY_SKIPPED'),
        ['SLUICE_MISSING_KEY_SKIPPED'],
        'warned once, however many requests',
      );
    } finally {
      process.off('warning', onWarning);
    }
  });

  it('missingKey per limit: a keyless client still meets the limit that has a key', () => {
    const l = limiter({
      limits: [
        { name: 'per-ip', limit: 10, period: '1m' },
        { name: 'per-key', limit: 1, period: '1m', key: (_r, info) => info.header('x-api-key'), missingKey: 'skip' },
        { name: 'login', limit: 5, period: '1m', key: (_r, info) => info.header('x-user'), missingKey: 'reject' },
      ],
    });
    const o = l.decide({ headers: { 'x-user': 'ann' } }) as HttpOutcome;
    assert.equal(header(o, 'ratelimit-policy'), '"per-ip";q=10;w=60, "login";q=5;w=60', 'per-key skipped');
    assert.equal((l.decide({}) as HttpOutcome).status, 400, 'login has no key and says reject');
  });

  it('limits computed from the request: cached per policy, validated once, with the option path', async () => {
    let calls = 0;
    const l = limiter({
      limits: [
        { name: 'ip', limit: 100, period: '1m' },
        (_r, info) => {
          calls++;
          const tenant = info.header('x-tenant');
          if (tenant === undefined) return null;
          return { name: `tenant`, limit: tenant === 'big' ? 3 : 1, period: '1m', key: tenant };
        },
      ],
    });
    assert.equal((l.decide({ headers: { 'x-tenant': 'small' } }) as HttpOutcome).pass, true);
    assert.equal((l.decide({ headers: { 'x-tenant': 'small' } }) as HttpOutcome).pass, false);
    for (let i = 0; i < 3; i++) assert.equal((l.decide({ headers: { 'x-tenant': 'big' } }) as HttpOutcome).pass, true);
    const o = l.decide({ headers: { 'x-tenant': 'big' } }) as HttpOutcome;
    assert.equal(o.pass, false);
    assert.equal(header(o, 'ratelimit-policy'), '"ip";q=100;w=60, "tenant";q=3;w=60', 'every policy is listed');
    assert.equal(header(o, 'x-ratelimit-limit'), '3', 'X-RateLimit-* describe the one that rejected');
    assert.equal(header(l.decide({}) as HttpOutcome, 'ratelimit-policy'), '"ip";q=100;w=60');
    assert.equal(calls, 7);

    const bad = limiter({ limits: [() => ({ limit: -1, period: '1m' })] });
    assert.throws(
      () => bad.decide({}),
      (e: unknown) => isSluiceError(e, 'ERR_SLUICE_INVALID_LIMIT') && /limits\[0\]\.limit/.test(e.message),
    );
    // A named computed limit is found by its place in limits, whatever it calls itself.
    const named = limiter({ limits: [{ limit: 5, period: '1m' }, () => ({ name: 'plan', limit: -1, period: '1m' })] });
    assert.throws(
      () => named.decide({}),
      (e: unknown) => isSluiceError(e, 'ERR_SLUICE_INVALID_LIMIT') && /limits\[1\]\.limit/.test(e.message),
    );
    const unknown = limiter({ limits: [() => ({ limit: 1, period: '1m', colour: 'red' }) as never] });
    throwsCode(() => unknown.decide({}), 'ERR_SLUICE_UNKNOWN_OPTION', 'limits[0].colour');
    throwsCode(
      () => limiter({ limits: [() => ({ limit: 1, period: '1m', key: {} }) as never] }).decide({}),
      'ERR_SLUICE_INVALID_KEY',
      'limits[0].key',
    );
    const none = limiter({ limits: [() => null] });
    assert.equal((none.decide({}) as HttpOutcome).pass, true);
  });

  it('shares one store between every computed limit', () => {
    const store = createMemoryStore();
    const l = limiter({ store, limit: (_r, info) => (info.header('x-plan') === 'paid' ? 5 : 2), period: '1m' });
    l.decide({ headers: { 'x-plan': 'paid' } });
    l.decide({});
    assert.equal(store.stats().keys, 2, 'two policies, two counters, one store');
  });

  it('access lists can change while running', () => {
    const deny = createAccessList();
    const l = limiter({ limit: 10, period: '1m', deny });
    assert.equal((l.decide({ peer: '198.51.100.7' }) as HttpOutcome).pass, true);
    deny.add('198.51.100.0/24');
    assert.equal((l.decide({ peer: '198.51.100.7' }) as HttpOutcome).status, 403);
    assert.equal(deny.delete('198.51.100.0/24'), true);
    assert.equal((l.decide({ peer: '198.51.100.7' }) as HttpOutcome).pass, true);
    deny.add('2001:db8::/32');
    assert.equal((l.decide({ peer: '2001:db8::5' }) as HttpOutcome).status, 403);
    deny.add('::ffff:203.0.113.1');
    assert.equal((l.decide({ peer: '203.0.113.1' }) as HttpOutcome).status, 403);
    assert.deepEqual(deny.entries(), ['2001:db8::/32', '::ffff:203.0.113.1']);
  });

  it('names the option at fault', () => {
    throwsCode(() => limiter({}), 'ERR_SLUICE_INVALID_OPTION', 'limit');
    throwsCode(() => limiter({ limit: 1, period: '1s', limitt: 2 } as never), 'ERR_SLUICE_UNKNOWN_OPTION', 'limitt');
    throwsCode(() => limiter({ limit: -1, period: '1s' }), 'ERR_SLUICE_INVALID_LIMIT', 'limit');
    throwsCode(() => limiter({ limit: 1, period: '1s', limits: [] }), 'ERR_SLUICE_INVALID_OPTION', 'limits');
    throwsCode(() => limiter({ limits: [] }), 'ERR_SLUICE_INVALID_OPTION', 'limits');
    throwsCode(
      () =>
        limiter({
          limits: [
            { limit: 1, period: '1s' },
            { limit: 1, period: 'soon' },
          ],
        }),
      'ERR_SLUICE_INVALID_DURATION',
      'limits[1].period',
    );
    throwsCode(
      () =>
        limiter({
          limits: [
            { name: 'a', limit: 1, period: '1s' },
            { name: 'a', limit: 2, period: '1s' },
          ],
        }),
      'ERR_SLUICE_INVALID_OPTION',
      'limits[1].name',
    );
    throwsCode(
      () => limiter({ limits: [{ limit: () => 1, period: 'soon' }] }),
      'ERR_SLUICE_INVALID_DURATION',
      'limits[0].period',
    );
    throwsCode(
      () => limiter({ limits: [{ limit: 1, period: '1s', key: 'ip' as never }] }),
      'ERR_SLUICE_INVALID_OPTION',
      'limits[0].key',
    );
    throwsCode(() => limiter({ limit: 1, period: '1s', name: 'naïve' }), 'ERR_SLUICE_INVALID_OPTION', 'name');
    throwsCode(() => limiter({ limit: 1, period: '1s', mode: 'queue' as never }), 'ERR_SLUICE_INVALID_OPTION', 'mode');
    throwsCode(
      () => limiter({ limit: 1, period: '1s', headers: 'all' as never }),
      'ERR_SLUICE_INVALID_OPTION',
      'headers',
    );
    throwsCode(() => limiter({ limit: 1, period: '1s', cost: -1 }), 'ERR_SLUICE_INVALID_COST', 'cost');
    throwsCode(() => limiter({ limit: 1, period: '1s', maxDelayMs: 5 }), 'ERR_SLUICE_INVALID_OPTION', 'maxDelayMs');
    throwsCode(() => limiter({ limit: 1, period: '1s', statusCode: 200 }), 'ERR_SLUICE_INVALID_OPTION', 'statusCode');
    throwsCode(() => limiter({ limit: 1, period: '1s', skip: true as never }), 'ERR_SLUICE_INVALID_OPTION', 'skip');
    throwsCode(() => limiter({ limit: 1, period: '1s', allow: 'x' as never }), 'ERR_SLUICE_INVALID_OPTION', 'allow');
    throwsCode(
      () => limiter({ limit: 1, period: '1s', trustProxy: ['x'] }),
      'ERR_SLUICE_INVALID_OPTION',
      'trustProxy[0]',
    );
    throwsCode(() => limiter({ limit: 1, period: '1s', fail: 'maybe' as never }), 'ERR_SLUICE_INVALID_OPTION', 'fail');
  });

  it("another library's option names are coded errors that say the sluice spelling", () => {
    const hint = (options: object, option: string, fix: RegExp) =>
      assert.throws(
        () => limiter(options as never),
        (e: unknown) => isSluiceError(e, 'ERR_SLUICE_UNKNOWN_OPTION') && e.option === option && fix.test(e.message),
        option,
      );
    hint({ windowMs: 900_000, limit: 100 }, 'windowMs', /period/);
    hint({ max: 100, period: '15m' }, 'max', /limit: 100/);
    hint({ limit: 1, period: '1m', keyGenerator: () => 'k' }, 'keyGenerator', /key: \(req\)/);
    hint({ limit: 1, period: '1m', standardHeaders: 'draft-8' }, 'standardHeaders', /headers: 'draft'/);
    hint({ points: 10, period: '1s' }, 'points', /limit/);
    hint({ limit: 10, duration: 60 }, 'duration', /period: '60s'/);
    hint({ limit: 10, timeWindow: '1 minute' }, 'timeWindow', /period/);
  });

  it('period: 60 (seconds in other libraries) is warned about: it is 60 ms', async () => {
    const seen: string[] = [];
    const onWarning = (w: Error & { code?: string }) => void (w.code && seen.push(w.message));
    process.on('warning', onWarning);
    try {
      limiter({ limit: 10, period: 60 });
      await new Promise((resolve) => setImmediate(resolve));
    } finally {
      process.off('warning', onWarning);
    }
    assert.ok(
      seen.some((m) => /period: 60 is 60 milliseconds.*'60s'/.test(m)),
      seen.join('\n'),
    );
  });

  it('a key that is neither a string nor a number is an error, not a silent bypass', () => {
    const l = limiter({ limit: 1, period: '1s', key: () => ({ id: 42 }) as never });
    assert.throws(
      () => l.decide({}),
      (e: unknown) => isSluiceError(e, 'ERR_SLUICE_INVALID_KEY'),
    );
  });
});
