/**
 * The recorder's `/v1/check` records: the layout replay reads (t, check, cost, outcome, rule, src), the key
 * hashed unless raw keys, only the policy fields copied, and the sample by key (a key is in or out for good).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseRules } from 'sluice/rules';
import { type CheckDecisionInfo, createCaptureRecorder } from './capture-recorder.js';

const loaded = parseRules([{ file: 'r.yaml', text: 'domain: api\ndescriptors:\n  - key: user\n' }]);
if (!loaded.ok) throw new Error('rules');
const ruleSet = loaded.ruleSet;

const info = (key: string, allowed = true): CheckDecisionInfo => ({
  key,
  item: { key, limit: 3, period: '10s', algorithm: 'gcra', burst: 2, name: 'uploads', cost: 1, op: 'check', nowMs: 5 },
  cost: 1,
  atMs: 1_764_374_400_000,
  policyId: 'uploads~gc3/10000b2',
  allowed,
});

describe('createCaptureRecorder: /v1/check', () => {
  it('writes the layout replay reads, the key hashed and only the policy fields', () => {
    const lines: string[] = [];
    const recorder = createCaptureRecorder({ dir: '/unused', sample: 1, secret: 'a-secret-of-16-bytes-or-more' }, (l) =>
      lines.push(l),
    );
    recorder.recordCheck(info('tenant-7'), ruleSet);
    recorder.recordCheck(info('tenant-7', false), ruleSet);
    const [first, second] = lines.map((l) => JSON.parse(l));
    assert.deepEqual(Object.keys(first), ['t', 'check', 'cost', 'outcome', 'rule', 'src']);
    assert.deepEqual(Object.keys(first.check), ['key', 'limit', 'period', 'algorithm', 'burst', 'name']);
    assert.match(first.check.key, /^#[0-9a-f]{20}$/);
    assert.equal(second.check.key, first.check.key, 'one hash per key');
    assert.deepEqual(
      [first.outcome, second.outcome, first.src, first.rule],
      ['OK', 'OVER_LIMIT', 'check', 'uploads~gc3/10000b2'],
    );
    assert.ok(!lines.join('').includes('tenant-7'));
  });

  it('writes the key as sent with raw keys, and samples by key', () => {
    const lines: string[] = [];
    const raw = createCaptureRecorder({ dir: '/unused', sample: 1, rawKeys: true }, (l) => lines.push(l));
    raw.recordCheck(info('tenant-7'), ruleSet);
    assert.equal(JSON.parse(lines[0] as string).check.key, 'tenant-7');

    const sampled: string[] = [];
    const half = createCaptureRecorder({ dir: '/unused', sample: 0.5, rawKeys: true }, (l) => sampled.push(l));
    for (let round = 0; round < 3; round++) for (let k = 0; k < 200; k++) half.recordCheck(info(`k${k}`), ruleSet);
    const keys = new Map<string, number>();
    for (const l of sampled) keys.set(JSON.parse(l).check.key, (keys.get(JSON.parse(l).check.key) ?? 0) + 1);
    assert.ok(keys.size > 50 && keys.size < 150, `about half the keys (${keys.size})`);
    assert.ok(
      [...keys.values()].every((n) => n === 3),
      'a sampled key has every one of its checks',
    );
    const none: string[] = [];
    createCaptureRecorder({ dir: '/unused', sample: 0 }, (l) => none.push(l)).recordCheck(info('k'), ruleSet);
    assert.equal(none.length, 0);
  });
});
