/** The dashboard's adaptive figures: null when off, the named figures only, and at most 16 priorities. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createAdaptiveLimiter } from 'sluice/adaptive';
import { adaptiveView, MAX_ADAPTIVE_PRIORITIES } from './dashboard-adaptive.js';

describe('dashboard adaptive view', () => {
  it('is null without an adaptive limit', () => {
    assert.equal(adaptiveView(undefined), null);
  });

  it("shows a limiter's figures per priority, most important first", () => {
    const limiter = createAdaptiveLimiter({ initialLimit: 10, priorities: { gold: 0.6, bronze: 0.4 } });
    const permit = limiter.tryAcquire({ priority: 'gold' });
    assert.deepEqual(adaptiveView(limiter.stats()), {
      algorithm: 'gradient2',
      limit: 10,
      inFlight: 1,
      queued: 0,
      priorities: [
        { name: 'gold', share: 0.6, guaranteed: 6, inFlight: 1, queued: 0, admitted: 1, shed: 0 },
        { name: 'bronze', share: 0.4, guaranteed: 4, inFlight: 0, queued: 0, admitted: 0, shed: 0 },
      ],
    });
    if (permit.allowed) permit.release('ignore');
  });

  it('bounds the answer whatever the stats hold', () => {
    const figures = { share: 0, guaranteed: 0, inFlight: 0, queued: 0, admitted: 0, shed: 0, secret: 'x' };
    const priorities = Object.fromEntries(Array.from({ length: 40 }, (_, i) => [`p${i}`, figures]));
    const view = adaptiveView({ algorithm: 'aimd', limit: 1, inFlight: 0, queued: 0, priorities });
    assert.equal(view?.priorities.length, MAX_ADAPTIVE_PRIORITIES);
    assert.ok(!JSON.stringify(view).includes('secret'));
  });
});
