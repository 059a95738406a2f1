/**
 * A differential property test: random multi-descriptor requests, hits and time steps give the same
 * answers from the engine as from a tiny model of epoch-aligned fixed windows where a request passes
 * only if every limit of every descriptor has room, and a rejected request counts nowhere.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { harness, rules, T0 } from './helpers.js';

const RULES = rules(`
domain: prop
descriptors:
  - key: a
    rate_limit: { unit: second, requests_per_unit: 5 }
  - key: b
    value: x
    rate_limit: { unit: minute, requests_per_unit: 3 }
  - key: b
    rate_limit: { unit: minute, requests_per_unit: 10 }
  - key: c
    rate_limits:
      - { unit: second, requests_per_unit: 2 }
      - { unit: minute, requests_per_unit: 4 }
`);

/** The limits (id, limit, period) the model applies to one entry. */
function limitsOf(key: string, value: string): { id: string; limit: number; periodMs: number }[] {
  if (key === 'a') return [{ id: 'a', limit: 5, periodMs: 1000 }];
  if (key === 'b')
    return [value === 'x' ? { id: 'bx', limit: 3, periodMs: 60_000 } : { id: 'b', limit: 10, periodMs: 60_000 }];
  return [
    { id: 'c1', limit: 2, periodMs: 1000 },
    { id: 'c2', limit: 4, periodMs: 60_000 },
  ];
}

const step = fc.record({
  advanceMs: fc.constantFrom(0, 0, 0, 250, 1000, 20_000),
  descriptors: fc.uniqueArray(
    fc.record({
      key: fc.constantFrom('a', 'b', 'c'),
      value: fc.constantFrom('x', 'y'),
      hits: fc.constantFrom(0, 1, 1, 1, 2, 3),
    }),
    { minLength: 1, maxLength: 3, selector: (d) => d.key },
  ),
});

describe('rules engine property', () => {
  it('matches a model of all-or-nothing fixed windows', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 60 }), async (steps) => {
        const h = harness(RULES);
        const counts = new Map<string, number>();
        for (const s of steps) {
          h.clock.advance(s.advanceMs);
          const now = h.clock.now() - T0;
          const counterOf = (id: string, value: string, periodMs: number) =>
            `${id}|${value}|${Math.floor(now / periodMs)}`;
          const looks = s.descriptors.map((d) =>
            limitsOf(d.key, d.value).map((l) => {
              const counter = counterOf(l.id, d.value, l.periodMs);
              const count = counts.get(counter) ?? 0;
              return { counter, count, limit: l.limit, fits: count + d.hits <= l.limit };
            }),
          );
          const passed = looks.every((ls) => ls.every((l) => l.fits));
          const res = await h.engine.shouldRateLimit({
            domain: 'prop',
            descriptors: s.descriptors.map((d) => ({ entries: [{ key: d.key, value: d.value }], hitsAddend: d.hits })),
          });
          assert.equal(res.overallCode, passed ? 'OK' : 'OVER_LIMIT');
          for (const [i, d] of s.descriptors.entries()) {
            const ls = looks[i] ?? [];
            const status = res.statuses[i];
            assert.equal(status?.code, ls.every((l) => l.fits) ? 'OK' : 'OVER_LIMIT', `descriptor ${d.key}=${d.value}`);
            if (ls.length === 1 && ls[0]) {
              const after = passed ? ls[0].count + d.hits : ls[0].count;
              assert.equal(status?.limitRemaining, ls[0].limit - after);
            }
          }
          if (passed) {
            for (const [i, d] of s.descriptors.entries()) {
              for (const l of looks[i] ?? []) counts.set(l.counter, l.count + d.hits);
            }
          }
        }
      }),
      { numRuns: 150 },
    );
  });
});
