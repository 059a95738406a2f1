/** sluice's extensions to the envoy format: algorithm, burst, period, rate_limits, fail, and hot swaps. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { SluiceError } from '../../src/core/errors.js';
import { createRulesEngine, type RuleSet } from '../../src/rules/index.js';
import type { Store } from '../../src/stores/store.js';
import { harness, request, rules, T0 } from './helpers.js';

describe('rules extensions', () => {
  it('algorithm and burst: a token bucket admits its burst, then refills at the rate', async () => {
    const h = harness(
      rules(`
domain: api
descriptors:
  - key: user
    rate_limit: { algorithm: token-bucket, unit: second, requests_per_unit: 10, burst: 20 }
`),
    );
    for (let i = 0; i < 20; i++) assert.equal((await h.one('api', ['user', 'u'])).code, 'OK', `request ${i}`);
    const over = await h.one('api', ['user', 'u']);
    assert.deepEqual(
      [over.code, over.currentLimit?.algorithm, over.durationUntilResetMs],
      ['OVER_LIMIT', 'token-bucket', 100],
    );
    h.clock.advance(100);
    assert.equal((await h.one('api', ['user', 'u'])).code, 'OK');
    assert.equal((await h.one('api', ['user', 'u'])).code, 'OVER_LIMIT');
  });

  it('sliding-window counts across the window boundary where a fixed window would reset', async () => {
    const text = (algorithm: string) => `
domain: api
descriptors:
  - key: user
    rate_limit: { algorithm: ${algorithm}, unit: minute, requests_per_unit: 10 }
`;
    const sliding = harness(rules(text('sliding-window')));
    const fixed = harness(rules(text('fixed-window')));
    for (const h of [sliding, fixed]) {
      h.clock.advance(55_000);
      for (let i = 0; i < 10; i++) await h.one('api', ['user', 'u']);
      h.clock.advance(10_000);
    }
    assert.equal((await sliding.one('api', ['user', 'u'])).code, 'OVER_LIMIT');
    assert.equal((await fixed.one('api', ['user', 'u'])).code, 'OK');
  });

  it('period takes any duration; the status expresses it in the nearest unit', async () => {
    const h = harness(
      rules(`
domain: api
descriptors:
  - key: user
    rate_limit: { period: 5m, requests_per_unit: 100 }
  - key: slow
    rate_limit: { period: 5m, requests_per_unit: 1 }
`),
    );
    h.clock.advance(60_000);
    const s = await h.one('api', ['user', 'u']);
    assert.deepEqual(s.currentLimit, {
      requestsPerUnit: 20,
      unit: 'MINUTE',
      limit: 100,
      periodMs: 300_000,
      algorithm: 'fixed-window',
    });
    // The 5-minute window is aligned to the epoch too: 4 minutes left.
    assert.equal(s.durationUntilResetMs, 240_000);
    const slow = await h.one('api', ['slow', 'u']);
    assert.deepEqual([slow.currentLimit?.requestsPerUnit, slow.currentLimit?.unit], [12, 'HOUR']);
  });

  it('rate_limits: several limits on one descriptor, all or nothing, reporting the binding one', async () => {
    const h = harness(
      rules(`
domain: api
descriptors:
  - key: api_key
    rate_limits:
      - { name: per-second, unit: second, requests_per_unit: 2 }
      - { name: per-minute, unit: minute, requests_per_unit: 3 }
`),
    );
    const step = async () => {
      const s = await h.one('api', ['api_key', 'k']);
      return [s.code, s.ruleName, s.limitRemaining];
    };
    assert.deepEqual(await step(), ['OK', 'per-second', 1]);
    assert.deepEqual(await step(), ['OK', 'per-second', 0]);
    // Rejected by the per-second limit: the per-minute limit is not charged.
    assert.deepEqual(await step(), ['OVER_LIMIT', 'per-second', 0]);
    h.clock.advance(1000);
    assert.deepEqual(await step(), ['OK', 'per-minute', 0]);
    assert.deepEqual(await step(), ['OVER_LIMIT', 'per-minute', 0]);
  });

  it('large monthly quotas load (fixed windows count any uint32 limit exactly)', async () => {
    const h = harness(
      rules(`
domain: api
descriptors:
  - key: tenant
    rate_limit: { unit: month, requests_per_unit: 4000000000 }
`),
    );
    const s = await h.one('api', ['tenant', 't']);
    assert.deepEqual([s.code, s.limitRemaining], ['OK', 3_999_999_999]);
  });

  describe('fail', () => {
    const down: Store = {
      name: 'down',
      synchronous: false,
      check: () => Promise.reject(new SluiceError('ERR_SLUICE_STORE_UNAVAILABLE', 'redis is down')),
      checkMany: () => Promise.reject(new SluiceError('ERR_SLUICE_STORE_UNAVAILABLE', 'redis is down')),
      refund: async () => {},
      reset: async () => {},
      acquire: () => Promise.reject(new Error('unused')),
      release: async () => false,
      close: async () => {},
    };
    const FAILING = rules(`
domain: api
fail: open
descriptors:
  - key: open
    rate_limit: { unit: minute, requests_per_unit: 2 }
  - key: closed
    fail: closed
    rate_limit: { unit: minute, requests_per_unit: 2 }
  - key: insured
    fail: insurance
    rate_limit: { unit: minute, requests_per_unit: 2 }
`);
    const FAIL_SILENT = rules(`
domain: api
descriptors:
  - key: any
    rate_limit: { unit: minute, requests_per_unit: 2 }
`);

    it('open allows, closed rejects, insurance counts in memory; all marked degraded', async () => {
      const engine = createRulesEngine({ ruleSet: FAILING, store: down });
      const ask = (key: string) => engine.shouldRateLimit(request('api', [[key, 'v']]));
      for (let i = 0; i < 3; i++) {
        const s = (await ask('open')).statuses[0];
        assert.deepEqual([s?.code, s?.decision?.degraded], ['OK', true]);
      }
      const closed = (await ask('closed')).statuses[0];
      assert.deepEqual(
        [closed?.code, closed?.decision?.reason, closed?.decision?.degraded],
        ['OVER_LIMIT', 'store-unavailable', true],
      );
      assert.equal((await ask('insured')).overallCode, 'OK');
      assert.equal((await ask('insured')).overallCode, 'OK');
      const third = (await ask('insured')).statuses[0];
      assert.deepEqual([third?.code, third?.decision?.degraded], ['OVER_LIMIT', true]);
    });

    it('insurance takes its share of the limit; a fail-closed descriptor rejects the whole request', async () => {
      const engine = createRulesEngine({ ruleSet: FAILING, store: down, insuranceShare: 0.5 });
      const mixed = await engine.shouldRateLimit(request('api', [['insured', 'v']], [['closed', 'v']]));
      assert.deepEqual(
        mixed.statuses.map((s) => s.code),
        ['OK', 'OVER_LIMIT'],
      );
      // The rejected request did not charge the insurance counter; half of 2 is 1 request.
      assert.equal((await engine.shouldRateLimit(request('api', [['insured', 'v']]))).overallCode, 'OK');
      assert.equal((await engine.shouldRateLimit(request('api', [['insured', 'v']]))).overallCode, 'OVER_LIMIT');
    });

    it('bad failure options are refused at construction', () => {
      assert.throws(() => createRulesEngine({ ruleSet: FAILING, fail: 'sometimes' as never }), /fail/);
      assert.throws(() => createRulesEngine({ ruleSet: FAILING, insuranceShare: 2 }), /insuranceShare/);
    });

    it('with no policy anywhere the store error is thrown; the engine option is the default', async () => {
      const strict = createRulesEngine({ ruleSet: FAIL_SILENT, store: down });
      await assert.rejects(strict.shouldRateLimit(request('api', [['any', 'v']])), /redis is down/);
      const lenient = createRulesEngine({ ruleSet: FAIL_SILENT, store: down, fail: 'open' });
      assert.equal((await lenient.shouldRateLimit(request('api', [['any', 'v']]))).overallCode, 'OK');
    });
  });

  it('setRuleSet keeps counters of unchanged rules, and of fixed windows whose limit changed', async () => {
    const v1 = `
domain: api
descriptors:
  - key: user
    rate_limit: { unit: minute, requests_per_unit: 5 }
  - key: ip
    rate_limit: { algorithm: token-bucket, unit: minute, requests_per_unit: 5 }
`;
    const h = harness(rules(v1));
    for (let i = 0; i < 3; i++) await h.ask('api', [['user', 'u']], [['ip', 'i']]);
    h.engine.setRuleSet(
      rules(
        v1.replace('requests_per_unit: 5 }\n  - key: ip', 'requests_per_unit: 10 }\n  - key: ip'),
        'domain: other\ndescriptors:\n  - { key: k, rate_limit: { unit: second, requests_per_unit: 1 } }\n',
      ),
    );
    const after = await h.ask('api', [['user', 'u']], [['ip', 'i']]);
    assert.deepEqual(
      after.statuses.map((s) => [s.currentLimit?.requestsPerUnit, s.limitRemaining]),
      [
        [10, 6],
        [5, 1],
      ],
    );
    // A bucket whose policy changed starts afresh: its old state is in other units.
    h.engine.setRuleSet(
      rules(
        v1.replace(
          'token-bucket, unit: minute, requests_per_unit: 5',
          'token-bucket, unit: minute, requests_per_unit: 6',
        ),
      ),
    );
    assert.equal((await h.one('api', ['ip', 'i'])).limitRemaining, 5);
  });

  it('reset forgets the counters behind a request, and only those', async () => {
    const h = harness(
      rules(`
domain: api
descriptors:
  - key: user
    rate_limits:
      - { unit: minute, requests_per_unit: 2 }
      - { unit: hour, requests_per_unit: 3, algorithm: sliding-log }
`),
    );
    for (let i = 0; i < 2; i++) await h.ask('api', [['user', 'a']], [['user', 'b']]);
    assert.equal((await h.one('api', ['user', 'a'])).code, 'OVER_LIMIT');
    await h.engine.reset({ domain: 'api', descriptors: [{ entries: [{ key: 'user', value: 'a' }] }] });
    assert.deepEqual(
      [(await h.one('api', ['user', 'a'])).limitRemaining, (await h.one('api', ['user', 'b'])).code],
      [1, 'OVER_LIMIT'],
    );
  });

  it('the engine-wide shadow option answers OK overall and keeps the statuses (envoy SHADOW_MODE)', async () => {
    const h = harness(
      rules('domain: api\ndescriptors:\n  - { key: k, rate_limit: { unit: minute, requests_per_unit: 0 } }\n'),
      {
        shadow: true,
      },
    );
    const res = await h.ask('api', [['k', 'v']]);
    assert.deepEqual([res.overallCode, res.statuses[0]?.code, res.shadowed], ['OK', 'OVER_LIMIT', true]);
  });

  it('describeRules lists limits, unlimited and allow-listed rules for a dashboard', () => {
    const set: RuleSet = rules(`
domain: api
fail: open
descriptors:
  - key: tier
    value: free
    descriptors:
      - key: user
        shadow_mode: true
        rate_limits:
          - { name: burst, algorithm: gcra, period: 1s, requests_per_unit: 5, burst: 10 }
          - { name: daily, unit: day, requests_per_unit: 1000 }
  - key: tier
    value: internal
    rate_limit: { unlimited: true, name: internal }
  - key: office
    value: 10.0.0.1
`);
    const h = harness(set);
    assert.equal(h.clock.now(), T0);
    const described = h.engine.describeRules();
    assert.deepEqual(
      described.map((r) => [
        r.descriptor,
        r.name,
        r.shadow,
        r.unlimited,
        r.allowListed,
        r.fail,
        r.limits.map((l) => l.algorithm),
      ]),
      [
        ['tier=free/user', 'burst', true, false, false, 'open', ['gcra', 'fixed-window']],
        ['tier=internal', 'internal', false, true, false, 'open', []],
        ['office=10.0.0.1', undefined, false, false, true, 'open', []],
      ],
    );
    assert.deepEqual(described[0]?.limits[0], {
      name: 'burst',
      requestsPerUnit: 5,
      unit: 'SECOND',
      periodMs: 1000,
      algorithm: 'gcra',
      burst: 10,
      replaces: [],
    });
    assert.equal(described[0]?.line, 8);
  });
});
