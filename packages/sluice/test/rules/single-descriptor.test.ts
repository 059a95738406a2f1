/**
 * A request of one descriptor (what Envoy sends most) is decided by the engine's own short path; every
 * other request by the general one. The two must give the same answers: here the same random traces go
 * to two engines, one asking each descriptor alone, the other with a second descriptor no rule matches
 * (which takes the general path and changes nothing: no limit, no counter, OK).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import type { DescriptorEntry, RateLimitRequest, RateLimitResponse, RequestDescriptor } from '../../src/rules/index.js';
import { harness, rules } from './helpers.js';

const RULES = rules(`
domain: d
descriptors:
  - key: ip
    rate_limit: { unit: second, requests_per_unit: 3 }
  - key: ip
    value: vip
    rate_limit: { unit: minute, requests_per_unit: 100 }
  - key: user
    rate_limits:
      - { name: per-user-second, unit: second, requests_per_unit: 2 }
      - { name: per-user-minute, unit: minute, requests_per_unit: 5, algorithm: sliding-window }
  - key: bucket
    rate_limit: { algorithm: token-bucket, unit: second, requests_per_unit: 2, burst: 4 }
  - key: log
    rate_limit: { algorithm: sliding-log, unit: second, requests_per_unit: 2 }
  - key: free
    rate_limit: { unlimited: true }
  - key: allow
    value: listed
  - key: zero
    rate_limit: { unit: day, requests_per_unit: 0 }
  - key: shadow
    shadow_mode: true
    rate_limit: { unit: second, requests_per_unit: 1 }
  - key: quota
    quota_mode: true
    rate_limit: { unit: second, requests_per_unit: 1 }
  - key: replacing
    rate_limit: { name: new, unit: second, requests_per_unit: 2, replaces: [{ name: per-user-second }] }
  - key: path
    value: "/api/*"
    rate_limit: { unit: second, requests_per_unit: 2 }
  - key: shared
    value: "s*"
    share_threshold: true
    rate_limit: { unit: second, requests_per_unit: 2 }
  - key: detailed
    detailed_metric: true
    rate_limit: { unit: second, requests_per_unit: 2 }
  - key: parent
    value: p
    descriptors:
      - key: child
        rate_limit: { unit: second, requests_per_unit: 2 }
`);

/** Matches no rule of RULES: added to a request, it sends it down the general path and changes nothing. */
const INERT: RequestDescriptor = { entries: [{ key: 'no-rule-here', value: 'x' }] };

const keys = ['ip', 'user', 'bucket', 'log', 'free', 'allow', 'zero', 'shadow', 'quota', 'replacing'];
const entry = fc.oneof(
  fc.record({ key: fc.constantFrom(...keys), value: fc.constantFrom('a', 'b', 'vip', 'listed') }),
  fc.record({ key: fc.constant('path'), value: fc.constantFrom('/api/x', '/api/y', '/other') }),
  fc.record({ key: fc.constantFrom('shared', 'detailed'), value: fc.constantFrom('s1', 's2', 't') }),
  fc.record({ key: fc.constant('unknown-key'), value: fc.constant('a') }),
);
const descriptor: fc.Arbitrary<RequestDescriptor> = fc.oneof(
  fc.record({ entries: fc.tuple(entry).map((e) => [...e]) }),
  fc.record({
    entries: fc.constant<DescriptorEntry[]>([
      { key: 'parent', value: 'p' },
      { key: 'child', value: 'c' },
    ]),
  }),
  fc.record({ entries: fc.array(entry, { minLength: 0, maxLength: 2 }) }),
  fc.record(
    {
      entries: fc.tuple(entry).map((e) => [...e]),
      hitsAddend: fc.integer({ min: 0, max: 3 }),
      limit: fc.record({ requestsPerUnit: fc.integer({ min: 0, max: 3 }), unit: fc.constantFrom('SECOND' as const) }),
    },
    { requiredKeys: ['entries'] },
  ),
);
const step = fc.record({
  domain: fc.constantFrom('d', 'd', 'd', 'other'),
  descriptor,
  hitsAddend: fc.option(fc.integer({ min: 0, max: 3 }), { nil: undefined }),
  advanceMs: fc.constantFrom(0, 0, 100, 700, 1500),
});

/** What a caller sees of a response, for its first descriptor. */
function firstOf(response: RateLimitResponse) {
  return { overallCode: response.overallCode, shadowed: response.shadowed, status: response.statuses[0] };
}

describe('one-descriptor requests', () => {
  for (const options of [{}, { shadow: true }]) {
    it(`answer as the general path does${options.shadow ? ' (global shadow mode)' : ''}`, async () => {
      await fc.assert(
        fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 40 }), async (steps) => {
          const alone = harness(RULES, options);
          const general = harness(RULES, options);
          for (const s of steps) {
            alone.clock.advance(s.advanceMs);
            general.clock.advance(s.advanceMs);
            const base: RateLimitRequest = { domain: s.domain, descriptors: [s.descriptor] };
            if (s.hitsAddend !== undefined) base.hitsAddend = s.hitsAddend;
            const a = await alone.engine.shouldRateLimit(base);
            const g = await general.engine.shouldRateLimit({ ...base, descriptors: [s.descriptor, INERT] });
            assert.equal(a.statuses.length, 1);
            assert.deepEqual(firstOf(a), firstOf(g));
          }
        }),
        { numRuns: 150 },
      );
    });
  }

  it('are decided synchronously by decide() on the memory store, as shouldRateLimit decides them', async () => {
    const h = harness(RULES);
    const decide = h.engine.decide;
    assert.ok(decide !== undefined);
    const request: RateLimitRequest = { domain: 'd', descriptors: [{ entries: [{ key: 'ip', value: 'a' }] }] };
    const now = decide(request);
    assert.ok(!(now instanceof Promise));
    assert.deepEqual([now.overallCode, now.statuses[0]?.limitRemaining], ['OK', 2]);
    assert.equal((await h.engine.shouldRateLimit(request)).statuses[0]?.limitRemaining, 1);
    // A malformed request: decide() throws what shouldRateLimit rejects with.
    const bad = { domain: '', descriptors: [] } as RateLimitRequest;
    const rejected = await h.engine.shouldRateLimit(bad).then(
      () => undefined,
      (error: unknown) => error,
    );
    assert.throws(() => decide(bad), rejected as Error);
  });
});
