/**
 * The behaviours envoyproxy/ratelimit's own tests pin down, rewritten against sluice's engine with a
 * memory store and a manual clock. Where sluice differs on purpose (a rejected request consumes
 * nothing), the test says so.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { isRequestError, REQUEST_ERROR_CODES } from '../../src/rules/index.js';
import { harness, rules, T0 } from './helpers.js';

const BASIC = rules(`
domain: test-domain
descriptors:
  - key: key1
    value: value1
    rate_limit: { unit: second, requests_per_unit: 5 }
  - key: key2
    rate_limit: { unit: minute, requests_per_unit: 20 }
  - key: key2
    value: value2
    rate_limit: { unit: minute, requests_per_unit: 30 }
  - key: key2
    value: value3
    descriptors:
      - key: subkey
        rate_limit: { unit: hour, requests_per_unit: 10 }
      - key: subkey
        value: special
        rate_limit: { unit: day, requests_per_unit: 2 }
  - key: key3
    value: free
  - key: key3
    rate_limit: { unit: hour, requests_per_unit: 1 }
  - key: key4
    rate_limit: { unit: day, requests_per_unit: 0 }
  - key: key5
    rate_limit: { unlimited: true }
`);

describe('envoy ratelimit behaviours', () => {
  it('an unknown domain answers OK with no limit', async () => {
    const h = harness(BASIC);
    const res = await h.ask('no-such-domain', [['key1', 'value1']], [['key2', 'x']]);
    assert.equal(res.overallCode, 'OK');
    assert.deepEqual(res.statuses, [
      { code: 'OK', limitRemaining: 0, durationUntilResetMs: 0 },
      { code: 'OK', limitRemaining: 0, durationUntilResetMs: 0 },
    ]);
  });

  it('20 per minute: 20 OK with remaining 19..0, then OVER_LIMIT until the next minute', async () => {
    const h = harness(BASIC);
    h.clock.advance(15_000);
    for (let i = 0; i < 20; i++) {
      const s = await h.one('test-domain', ['key2', 'anything']);
      assert.equal(s.code, 'OK');
      assert.equal(s.limitRemaining, 19 - i);
      assert.deepEqual([s.currentLimit?.requestsPerUnit, s.currentLimit?.unit], [20, 'MINUTE']);
      // Fixed windows aligned to the epoch: 45 s left in this minute.
      assert.equal(s.durationUntilResetMs, 45_000);
    }
    for (let i = 0; i < 3; i++) {
      const res = await h.ask('test-domain', [['key2', 'anything']]);
      assert.equal(res.overallCode, 'OVER_LIMIT');
      assert.equal(res.statuses[0]?.code, 'OVER_LIMIT');
      assert.equal(res.statuses[0]?.limitRemaining, 0);
      assert.equal(res.statuses[0]?.durationUntilResetMs, 45_000);
    }
    h.clock.advance(45_000);
    const next = await h.one('test-domain', ['key2', 'anything']);
    assert.deepEqual([next.code, next.limitRemaining, next.durationUntilResetMs], ['OK', 19, 60_000]);
  });

  it('each value of a bare key has its own counter', async () => {
    const h = harness(BASIC);
    for (let i = 0; i < 20; i++) await h.one('test-domain', ['key2', 'a']);
    assert.equal((await h.one('test-domain', ['key2', 'a'])).code, 'OVER_LIMIT');
    assert.equal((await h.one('test-domain', ['key2', 'b'])).limitRemaining, 19);
  });

  it('two descriptors in one request: the overall code is the worst, each status its own', async () => {
    const h = harness(BASIC);
    for (let i = 0; i < 5; i++) await h.one('test-domain', ['key1', 'value1']);
    const res = await h.ask('test-domain', [['key2', 'x']], [['key1', 'value1']]);
    assert.equal(res.overallCode, 'OVER_LIMIT');
    assert.deepEqual(
      res.statuses.map((s) => [s.code, s.currentLimit?.requestsPerUnit, s.limitRemaining]),
      [
        // Differs on purpose: envoy ratelimit would have counted this hit on key2 (remaining 19).
        ['OK', 20, 20],
        ['OVER_LIMIT', 5, 0],
      ],
    );
    const both = await h.ask('test-domain', [['key2', 'x']], [['key3', 'y']]);
    assert.equal(both.overallCode, 'OK');
  });

  it('a rejected request consumes from none of its descriptors (a deliberate difference)', async () => {
    const h = harness(BASIC);
    await h.one('test-domain', ['key3', 'y']); // key3 is 1/hour: now exhausted
    for (let i = 0; i < 5; i++) {
      const res = await h.ask('test-domain', [['key1', 'value1']], [['key3', 'y']]);
      assert.equal(res.overallCode, 'OVER_LIMIT');
    }
    // key1 (5/second) was never charged for the five rejected requests.
    assert.equal((await h.one('test-domain', ['key1', 'value1'])).limitRemaining, 4);
  });

  it('the most specific rule wins: exact value over bare key, nested rules by their own path', async () => {
    const h = harness(BASIC);
    const limitOf = async (...entries: [string, string][]) => (await h.one('test-domain', ...entries)).currentLimit;
    assert.deepEqual(
      [(await limitOf(['key2', 'value2']))?.requestsPerUnit, (await limitOf(['key2', 'value2']))?.unit],
      [30, 'MINUTE'],
    );
    assert.equal((await limitOf(['key2', 'other']))?.requestsPerUnit, 20);
    assert.deepEqual((await limitOf(['key2', 'value3'], ['subkey', 'x']))?.unit, 'HOUR');
    assert.deepEqual((await limitOf(['key2', 'value3'], ['subkey', 'special']))?.unit, 'DAY');
    assert.equal(await limitOf(['key1', 'other']), undefined);
  });

  it('depth must match: a longer or shorter descriptor than the rule gets no limit', async () => {
    const h = harness(BASIC);
    const deeper = await h.one('test-domain', ['key1', 'value1'], ['extra', 'x']);
    assert.deepEqual(deeper, { code: 'OK', limitRemaining: 0, durationUntilResetMs: 0 });
    // key2=value3 has only children with limits: the parent alone is not limited.
    const shallower = await h.one('test-domain', ['key2', 'value3']);
    assert.equal(shallower.currentLimit, undefined);
    // A path that leaves the tree part-way is not limited either.
    const off = await h.one('test-domain', ['key2', 'value3'], ['nope', 'x']);
    assert.equal(off.currentLimit, undefined);
  });

  it('unlimited: OK, no current limit, limit_remaining 4294967295, however often', async () => {
    const h = harness(BASIC);
    for (let i = 0; i < 50; i++) {
      const s = await h.one('test-domain', ['key5', 'v']);
      assert.deepEqual([s.code, s.currentLimit, s.limitRemaining], ['OK', undefined, 4_294_967_295]);
    }
  });

  it('a key/value with no limit and no children is allow-listed, though its key has a default', async () => {
    const h = harness(BASIC);
    for (let i = 0; i < 5; i++) {
      const s = await h.one('test-domain', ['key3', 'free']);
      assert.deepEqual([s.code, s.currentLimit], ['OK', undefined]);
    }
    await h.one('test-domain', ['key3', 'paid']);
    assert.equal((await h.one('test-domain', ['key3', 'paid'])).code, 'OVER_LIMIT');
  });

  it('requests_per_unit 0 blocks every request', async () => {
    const h = harness(BASIC);
    const s = await h.one('test-domain', ['key4', 'anyone']);
    assert.deepEqual([s.code, s.currentLimit?.requestsPerUnit, s.limitRemaining], ['OVER_LIMIT', 0, 0]);
  });

  it('shadow mode answers OK, still counts, and reports that it would have limited', async () => {
    const h = harness(
      rules(`
domain: shadow
descriptors:
  - key: user
    shadow_mode: true
    rate_limit: { unit: minute, requests_per_unit: 2 }
  - key: ip
    rate_limit: { unit: minute, requests_per_unit: 10 }
`),
    );
    const first = await h.one('shadow', ['user', 'u1']);
    assert.deepEqual([first.code, first.limitRemaining, first.shadow], ['OK', 1, undefined]);
    await h.one('shadow', ['user', 'u1']);
    const over = await h.ask('shadow', [['user', 'u1']], [['ip', 'i1']]);
    assert.equal(over.overallCode, 'OK');
    assert.deepEqual(
      [
        over.statuses[0]?.code,
        over.statuses[0]?.limitRemaining,
        over.statuses[0]?.shadow,
        over.statuses[0]?.decision?.allowed,
      ],
      ['OK', 0, true, false],
    );
    // The request passed, so the enforced descriptor counted it.
    assert.equal(over.statuses[1]?.limitRemaining, 9);
  });

  describe('replaces', () => {
    const REPLACES = rules(`
domain: replaces
descriptors:
  - key: user
    rate_limit: { name: standard, unit: minute, requests_per_unit: 2 }
  - key: plan
    value: premium
    rate_limit:
      unit: minute
      requests_per_unit: 5
      replaces: [{ name: standard }]
  - key: ip
    rate_limit: { name: per-ip, unit: minute, requests_per_unit: 1 }
  - key: plan
    value: enterprise
    rate_limit:
      unit: minute
      requests_per_unit: 100
      replaces: [{ name: standard }, { name: per-ip }]
`);

    it('a replacing rule raises the limit, and the replaced counter is left untouched', async () => {
      const h = harness(REPLACES);
      for (let i = 0; i < 5; i++) {
        const res = await h.ask('replaces', [['user', 'u1']], [['plan', 'premium']]);
        assert.equal(res.overallCode, 'OK');
        assert.deepEqual(res.statuses[0], { code: 'OK', limitRemaining: 0, durationUntilResetMs: 0 });
        assert.equal(res.statuses[1]?.limitRemaining, 4 - i);
      }
      assert.equal((await h.ask('replaces', [['user', 'u1']], [['plan', 'premium']])).overallCode, 'OVER_LIMIT');
      // The standard limit never counted those: u1 still has its 2.
      assert.equal((await h.one('replaces', ['user', 'u1'])).limitRemaining, 1);
    });

    it('one rule can replace several', async () => {
      const h = harness(REPLACES);
      for (let i = 0; i < 10; i++) {
        const res = await h.ask('replaces', [['user', 'u1']], [['ip', '10.0.0.1']], [['plan', 'enterprise']]);
        assert.equal(res.overallCode, 'OK');
        assert.deepEqual(
          res.statuses.map((s) => s.currentLimit?.requestsPerUnit),
          [undefined, undefined, 100],
        );
      }
    });

    it('without the replacing rule in the request, the named limit applies', async () => {
      const h = harness(REPLACES);
      await h.one('replaces', ['ip', '10.0.0.1']);
      assert.equal((await h.one('replaces', ['ip', '10.0.0.1'])).code, 'OVER_LIMIT');
    });
  });

  describe('wildcards', () => {
    const WILD = rules(`
domain: wild
descriptors:
  - key: path
    value: /api/*
    rate_limit: { unit: minute, requests_per_unit: 2 }
  - key: path
    value: /api/admin
    rate_limit: { unit: minute, requests_per_unit: 1 }
  - key: path
    rate_limit: { unit: minute, requests_per_unit: 100 }
  - key: word
    value: bar*b
    rate_limit: { unit: minute, requests_per_unit: 3 }
  - key: word
    value: a*b*c
    rate_limit: { unit: minute, requests_per_unit: 4 }
  - key: file
    value: /files/*
    share_threshold: true
    rate_limit: { unit: minute, requests_per_unit: 2 }
`);
    const limitOf = async (h: ReturnType<typeof harness>, key: string, value: string) =>
      (await h.one('wild', [key, value])).currentLimit?.requestsPerUnit;

    it('a trailing * matches any suffix; an exact value wins over it, and it wins over the bare key', async () => {
      const h = harness(WILD);
      assert.equal(await limitOf(h, 'path', '/api/users'), 2);
      assert.equal(await limitOf(h, 'path', '/api/'), 2);
      assert.equal(await limitOf(h, 'path', '/api/admin'), 1);
      assert.equal(await limitOf(h, 'path', '/web/x'), 100);
    });

    it('a * in the middle, and several *, match anywhere', async () => {
      const h = harness(WILD);
      assert.equal(await limitOf(h, 'word', 'barb'), 3);
      assert.equal(await limitOf(h, 'word', 'bar123b'), 3);
      assert.equal(await limitOf(h, 'word', 'xbarb'), undefined);
      assert.equal(await limitOf(h, 'word', 'barbx'), undefined);
      assert.equal(await limitOf(h, 'word', 'abc'), 4);
      assert.equal(await limitOf(h, 'word', 'a1b2c'), 4);
      assert.equal(await limitOf(h, 'word', 'acb'), undefined);
    });

    it('each matching value counts on its own, unless share_threshold folds them into one counter', async () => {
      const h = harness(WILD);
      await h.one('wild', ['path', '/api/a']);
      await h.one('wild', ['path', '/api/a']);
      assert.equal((await h.one('wild', ['path', '/api/a'])).code, 'OVER_LIMIT');
      assert.equal((await h.one('wild', ['path', '/api/b'])).code, 'OK');
      await h.one('wild', ['file', '/files/a']);
      await h.one('wild', ['file', '/files/b']);
      assert.equal((await h.one('wild', ['file', '/files/c'])).code, 'OVER_LIMIT');
    });
  });

  describe('hits_addend', () => {
    it('a descriptor hits_addend of 0 checks without counting', async () => {
      const h = harness(BASIC);
      for (let i = 0; i < 4; i++) await h.one('test-domain', ['key1', 'value1']);
      for (let i = 0; i < 3; i++) {
        const res = await h.engine.shouldRateLimit({
          domain: 'test-domain',
          descriptors: [{ entries: [{ key: 'key1', value: 'value1' }], hitsAddend: 0 }],
        });
        assert.deepEqual([res.overallCode, res.statuses[0]?.limitRemaining], ['OK', 1]);
      }
      assert.equal((await h.one('test-domain', ['key1', 'value1'])).limitRemaining, 0);
    });

    it('the request hits_addend applies to every descriptor; 0 counts as 1, as Envoy sends it', async () => {
      const h = harness(BASIC);
      const ask = (hitsAddend: number) =>
        h.engine.shouldRateLimit({
          domain: 'test-domain',
          hitsAddend,
          descriptors: [{ entries: [{ key: 'key2', value: 'x' }] }, { entries: [{ key: 'key2', value: 'y' }] }],
        });
      const res = await ask(5);
      assert.deepEqual(
        res.statuses.map((s) => s.limitRemaining),
        [15, 15],
      );
      assert.deepEqual(
        (await ask(0)).statuses.map((s) => s.limitRemaining),
        [14, 14],
      );
      // More hits than remain: rejected, and nothing taken.
      const over = await ask(15);
      assert.equal(over.overallCode, 'OVER_LIMIT');
      assert.deepEqual(
        (await ask(14)).statuses.map((s) => s.limitRemaining),
        [0, 0],
      );
    });
  });

  describe('limit override', () => {
    it('a descriptor limit replaces the config limit', async () => {
      const h = harness(BASIC);
      const ask = () =>
        h.engine.shouldRateLimit({
          domain: 'test-domain',
          descriptors: [{ entries: [{ key: 'key2', value: 'x' }], limit: { requestsPerUnit: 2, unit: 'SECOND' } }],
        });
      const first = await ask();
      assert.deepEqual(
        [
          first.statuses[0]?.currentLimit?.requestsPerUnit,
          first.statuses[0]?.currentLimit?.unit,
          first.statuses[0]?.limitRemaining,
        ],
        [2, 'SECOND', 1],
      );
      await ask();
      assert.equal((await ask()).overallCode, 'OVER_LIMIT');
      h.clock.advance(1000);
      assert.equal((await ask()).overallCode, 'OK');
    });

    it('applies to descriptors no rule matches, but not in an unknown domain (as in envoy ratelimit)', async () => {
      const h = harness(BASIC);
      const ask = (domain: string) =>
        h.engine.shouldRateLimit({
          domain,
          descriptors: [{ entries: [{ key: 'unmatched', value: 'x' }], limit: { requestsPerUnit: 0, unit: 'minute' } }],
        });
      assert.equal((await ask('test-domain')).overallCode, 'OVER_LIMIT');
      assert.equal((await ask('elsewhere')).overallCode, 'OK');
    });
  });

  it('malformed requests throw SluiceErrors with envoy ratelimit messages', async () => {
    const h = harness(BASIC);
    const cases: [unknown, string, RegExp][] = [
      [{ domain: '', descriptors: [] }, REQUEST_ERROR_CODES.emptyDomain, /^rate limit domain must not be empty$/],
      [
        { domain: 'd', descriptors: [] },
        REQUEST_ERROR_CODES.emptyDescriptors,
        /^rate limit descriptor list must not be empty$/,
      ],
      [
        { domain: 'd', descriptors: [{ entries: [{ key: '', value: 'v' }] }] },
        REQUEST_ERROR_CODES.emptyKey,
        /entry key must not be empty/,
      ],
      [
        { domain: 'd', descriptors: [{ entries: [{ key: 'k', value: 1 }] }] },
        REQUEST_ERROR_CODES.invalid,
        /entries\[0\]/,
      ],
      [
        { domain: 'd', hitsAddend: -1, descriptors: [{ entries: [{ key: 'k', value: 'v' }] }] },
        REQUEST_ERROR_CODES.invalid,
        /hitsAddend/,
      ],
      [
        {
          domain: 'd',
          descriptors: [{ entries: [{ key: 'k', value: 'v' }], limit: { requestsPerUnit: 1, unit: 'fortnight' } }],
        },
        REQUEST_ERROR_CODES.invalid,
        /limit\.unit/,
      ],
    ];
    for (const [req, code, message] of cases) {
      await assert.rejects(h.engine.shouldRateLimit(req as never), (error: unknown) => {
        assert.ok(isRequestError(error));
        assert.equal(error.code, code);
        assert.match(error.message, message);
        return true;
      });
    }
  });

  it('windows are aligned to the epoch for every unit; a month is 30 days and a year 365', async () => {
    const h = harness(
      rules(`
domain: units
descriptors:
  - { key: s, rate_limit: { unit: second, requests_per_unit: 1 } }
  - { key: w, rate_limit: { unit: week, requests_per_unit: 1 } }
  - { key: mo, rate_limit: { unit: month, requests_per_unit: 1 } }
  - { key: y, rate_limit: { unit: year, requests_per_unit: 1 } }
`),
    );
    h.clock.set(T0 + 250);
    const reset = async (key: string) => (await h.one('units', [key, 'v'])).durationUntilResetMs;
    assert.equal(await reset('s'), 750);
    const week = 7 * 86_400_000;
    const month = 30 * 86_400_000;
    const year = 365 * 86_400_000;
    assert.equal(await reset('w'), week - ((T0 + 250) % week));
    assert.equal(await reset('mo'), month - ((T0 + 250) % month));
    assert.equal(await reset('y'), year - ((T0 + 250) % year));
  });
});
