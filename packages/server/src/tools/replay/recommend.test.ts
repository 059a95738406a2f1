/** recommendLimits: per-key peaks, their percentiles as limits, and the share each would refuse; per rule in a replay. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseRules } from 'sluice/rules';
import type { CaptureRecord } from './capture-record.js';
import { type ObservedRequest, recommendLimits } from './recommend.js';
import { replay } from './replay.js';

/** `n` unit requests of `key` inside the window starting at `startMs`. */
function burst(key: string, n: number, startMs: number): ObservedRequest[] {
  return Array.from({ length: n }, (_, i) => ({ t: startMs + i, key, cost: 1 }));
}

describe('recommendLimits', () => {
  it('suggests the percentiles of per-key peaks and what each would refuse', () => {
    // 100 keys: key i sends i+1 requests in one minute, and 1 in the next.
    const requests = Array.from({ length: 100 }, (_, i) => [
      ...burst(`k${i}`, i + 1, 0),
      ...burst(`k${i}`, 1, 60_000),
    ]).flat();
    const rec = recommendLimits(requests, 60_000);
    assert.equal(rec.keys, 100);
    assert.equal(rec.units, 5050 + 100);
    const byName = Object.fromEntries(rec.suggestions.map((s) => [s.percentile, s]));
    assert.equal(byName.p50?.limit, 50);
    assert.equal(byName.p90?.limit, 90);
    assert.equal(byName.p99?.limit, 99);
    assert.equal(byName.max?.limit, 100);
    assert.equal(byName.max?.keysRejected, 0);
    assert.equal(byName.max?.requestsRejected, 0);
    // At 50 a minute, keys 51..100 are refused: 50 keys, 1 + 2 + ... + 50 = 1275 requests.
    assert.equal(byName.p50?.keysRejected, 0.5);
    assert.equal(byName.p50?.requestsRejected, 1275 / 5150);
    assert.equal(byName.p99?.keysRejected, 0.01);
  });

  it('counts cost, and windows separately', () => {
    const rec = recommendLimits(
      [
        { t: 0, key: 'a', cost: 5 },
        { t: 999, key: 'a', cost: 5 },
        { t: 1000, key: 'a', cost: 3 },
      ],
      1000,
    );
    assert.deepEqual(
      rec.suggestions.find((s) => s.percentile === 'max'),
      {
        percentile: 'max',
        limit: 10,
        keysRejected: 0,
        requestsRejected: 0,
      },
    );
  });

  it('answers an empty trace with zeros', () => {
    const rec = recommendLimits([], 1000);
    assert.equal(rec.keys, 0);
    assert.ok(rec.suggestions.every((s) => s.limit === 0 && s.keysRejected === 0 && s.requestsRejected === 0));
  });
});

describe('suggestions per rule', () => {
  it('counts a window out of order as in order', () => {
    const inOrder = recommendLimits(
      [0, 10, 61_000, 62_000, 63_000, 130_000].map((t) => ({ t, key: 'a', cost: 1 })),
      60_000,
    );
    const shuffled = recommendLimits(
      [61_000, 0, 62_000, 130_000, 10, 63_000].map((t) => ({ t, key: 'a', cost: 1 })),
      60_000,
    );
    assert.deepEqual(shuffled, inOrder);
    assert.equal(inOrder.suggestions.find((s) => s.percentile === 'max')?.limit, 3);
  });

  it('gives each rule of a replay its own keys, peaks and shares', async () => {
    const loaded = parseRules([
      {
        file: 'rules.yaml',
        text: `domain: api
descriptors:
  - key: user
    rate_limit: { name: per-user, unit: minute, requests_per_unit: 100 }
  - key: tenant
    rate_limit: { unit: minute, requests_per_unit: 100 }
`,
      },
    ]);
    if (!loaded.ok) throw new Error(JSON.stringify(loaded.issues));
    const records: CaptureRecord[] = [];
    const d = (key: string, value: string) => ({ entries: [{ key, value }] });
    // Users u0..u9 send 1..10 requests in one minute; tenant t0 takes them all (55), t1 sends 5.
    for (let u = 0; u < 10; u++) {
      for (let i = 0; i <= u; i++) {
        records.push({
          t: 1000 * u + i,
          domain: 'api',
          descriptors: [d('user', `u${u}`), d('tenant', 't0')],
          cost: 1,
          outcome: 'OK',
        });
      }
    }
    for (let i = 0; i < 5; i++)
      records.push({ t: 20_000 + i, domain: 'api', descriptors: [d('tenant', 't1')], cost: 1, outcome: 'OK' });
    records.sort((a, b) => a.t - b.t);
    const result = await replay(records, loaded.ruleSet);
    const users = result.recommendations.get('api|user');
    const tenants = result.recommendations.get('api|tenant');
    assert.deepEqual([users?.keys, users?.units, tenants?.keys, tenants?.units], [10, 55, 2, 60]);
    const limit = (rec: typeof users, p: string) => rec?.suggestions.find((s) => s.percentile === p);
    assert.deepEqual(limit(users, 'p50'), {
      percentile: 'p50',
      limit: 5,
      keysRejected: 0.5,
      requestsRejected: 15 / 55,
    });
    assert.deepEqual(limit(tenants, 'p50'), {
      percentile: 'p50',
      limit: 5,
      keysRejected: 0.5,
      requestsRejected: 50 / 60,
    });
    assert.equal(limit(tenants, 'max')?.limit, 55);
    assert.deepEqual([...(result.ruleNames.get('api|user') ?? [])], ['per-user']);
  });
});
