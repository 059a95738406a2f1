/**
 * The replay's short cut past the engine (rules-direct.ts) decides as the engine does: a seeded trace over every
 * rule shape — plain, nested, wildcard, two limits, shadow, replaces, unlimited, several descriptors, costs
 * of 0 and over the bound — captured live by the engine alone replays with 0 mismatches, per rule and per key.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseRules } from 'sluice/rules';
import { captureLive, type LiveRequest } from './capture-live.js';
import type { CaptureEntry, CaptureRecord } from './capture-record.js';
import { replay } from './replay.js';

const RULES = `domain: api
descriptors:
  - key: user
    rate_limit: { name: per-user, unit: minute, requests_per_unit: 5 }
  - key: blocked
    rate_limit: { unit: minute, requests_per_unit: 3, algorithm: sliding-log }
  - key: two
    rate_limits:
      - { name: two-a, unit: second, requests_per_unit: 2 }
      - { name: two-b, unit: minute, requests_per_unit: 6 }
  - key: tenant
    descriptors:
      - key: path
        value: /files/*
        rate_limit: { unit: minute, requests_per_unit: 4, algorithm: gcra, burst: 2 }
      - key: path
        value: /free
        rate_limit: { unlimited: true }
  - key: shadowed
    shadow_mode: true
    rate_limit: { unit: minute, requests_per_unit: 2 }
  - key: plan
    value: vip
    rate_limit: { name: vip, unit: minute, requests_per_unit: 50, replaces: [{ name: per-user }] }
`;

function* trace(seed: number, n: number): Generator<LiveRequest> {
  let s = seed;
  const next = () => {
    s = (s * 1103515245 + 12345) % 2 ** 31;
    return s / 2 ** 31;
  };
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(next() * xs.length)] as T;
  let t = 1_700_000_000_000;
  const one = (): CaptureEntry[] =>
    pick([
      [{ key: 'user', value: `u${Math.floor(next() * 4)}` }],
      [{ key: 'blocked', value: `b${Math.floor(next() * 2)}` }],
      [{ key: 'two', value: 'x' }],
      [
        { key: 'tenant', value: `t${Math.floor(next() * 2)}` },
        { key: 'path', value: pick(['/files/a', '/files/b', '/free', '/other']) },
      ],
      [{ key: 'shadowed', value: 's' }],
      [{ key: 'nothing', value: 'n' }],
    ]);
  for (let i = 0; i < n; i++) {
    t += Math.floor(next() * 900);
    const descriptors = [{ entries: one() }];
    if (next() < 0.2) descriptors.push({ entries: next() < 0.5 ? [{ key: 'plan', value: 'vip' }] : one() });
    const cost = pick([1, 1, 1, 2, 0, 5]);
    yield { t, domain: 'api', descriptors, cost };
  }
}

describe('the short cut past the rules engine', () => {
  it('decides every rule shape as the engine does (0 mismatches)', async () => {
    const loaded = parseRules([{ file: 'rules.yaml', text: RULES }]);
    if (!loaded.ok) throw new Error(JSON.stringify(loaded.issues));
    const seed = Date.now() % 100_000;
    console.log(`seed ${seed}`);
    const live: CaptureRecord[] = captureLive(loaded.ruleSet, trace(seed, 6000));
    assert.ok(live.some((r) => r.outcome === 'OVER_LIMIT'));
    const result = await replay(live, loaded.ruleSet);
    assert.equal(result.requests, 6000);
    assert.equal(result.total.newlyAdmitted + result.total.newlyRejected, 0, `seed ${seed}`);
    for (const [key, tally] of result.byKey) {
      assert.equal(tally.newlyAdmitted + tally.newlyRejected, 0, `${key}, seed ${seed}`);
    }
    // Against itself as the baseline too: both sides take the short cut, and agree.
    const both = await replay(live, loaded.ruleSet, loaded.ruleSet);
    assert.deepEqual(both.total, result.total);
  });
});
