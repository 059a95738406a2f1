/**
 * Replay: a capture decided live by the rules engine replays under the same rules with 0 flips, for every
 * algorithm; under stricter rules the flips are the requests that a stricter live run rejects and the first allowed.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseRules, type RuleSet } from 'sluice/rules';
import { captureLive, seededTrace } from './capture-live.js';
import { renderReplayHtml } from './html-report.js';
import { replay } from './replay.js';
import { ReplaySeries } from './replay-series.js';

const ALGORITHMS = ['fixed-window', 'sliding-window', 'sliding-log', 'token-bucket', 'leaky-bucket', 'gcra'];

function rules(algorithm: string, perMinute: number): RuleSet {
  const burst = algorithm.endsWith('bucket') || algorithm === 'gcra' ? `\n      burst: ${perMinute}` : '';
  const text = `domain: api
descriptors:
  - key: user
    rate_limit:
      name: per-user
      unit: minute
      requests_per_unit: ${perMinute}
      algorithm: ${algorithm}${burst}
`;
  const loaded = parseRules([{ file: 'rules.yaml', text }]);
  if (!loaded.ok) throw new Error(JSON.stringify(loaded.issues));
  return loaded.ruleSet;
}

/** A seeded trace decided live (as the service would), every decision captured. */
const liveCapture = (ruleSet: RuleSet, seed: number, n: number) => captureLive(ruleSet, seededTrace(seed, n, 5, 400));

describe('replay', () => {
  for (const algorithm of ALGORITHMS) {
    it(`${algorithm}: the rules that produced a capture reproduce it exactly`, async () => {
      const seed = Date.now() % 100_000;
      console.log(`seed ${seed}`);
      const live = rules(algorithm, 20);
      const capture = liveCapture(live, seed, 3000);
      const rejectedLive = capture.filter((r) => r.outcome === 'OVER_LIMIT').length;
      assert.ok(rejectedLive > 0, 'the trace reaches the limit');
      const result = await replay(capture, live);
      assert.equal(result.requests, 3000);
      assert.equal(result.total.newlyRejected + result.total.newlyAdmitted, 0, 'no flips');
      assert.equal(result.total.rejected, rejectedLive);
      // Against a stricter candidate, with the live rules as baseline: the flips are what changes.
      const stricter = await replay(capture, rules(algorithm, 10), live);
      const strictLive = liveCapture(rules(algorithm, 10), seed, 3000);
      assert.equal(stricter.total.rejected, strictLive.filter((r) => r.outcome === 'OVER_LIMIT').length);
      assert.ok(stricter.total.newlyRejected > 0);
      assert.equal(stricter.total.baselineRejected, rejectedLive);
      assert.equal(stricter.byRule.get('per-user')?.rejected, stricter.total.rejected);
      assert.equal(stricter.byKey.size, 5);
    });
  }

  it('keeps every counter, and says so loudly when a key bound made it forget one', async () => {
    const at = (t: number, user: string) => ({
      t,
      domain: 'api',
      descriptors: [{ entries: [{ key: 'user', value: user }] }],
      cost: 1,
      outcome: 'OK' as const,
    });
    // The victim, then many other keys, then the victim again within the minute: limit 1, so it is refused.
    const capture = [at(0, 'victim'), ...Array.from({ length: 50 }, (_, i) => at(1, `other${i}`)), at(2, 'victim')];
    const exact = await replay(capture, rules('fixed-window', 1));
    assert.equal(exact.evictions, 0);
    assert.equal(exact.byKey.get('api|user=victim')?.rejected, 1, 'the victim is refused the second time');
    // A store bounded below the keys forgets the victim: the replay counts it, so the report can say so.
    const bounded = await replay(capture, rules('fixed-window', 1), undefined, { maxKeys: 10 });
    assert.ok(bounded.evictions > 0);
    assert.equal(bounded.byKey.get('api|user=victim')?.rejected, 0);
    const html = renderReplayHtml({
      result: bounded,
      series: new ReplaySeries(),
      side: 'live',
      window: '1m',
      flipped: [],
      problems: 0,
    });
    assert.match(html, /WARNING: \d+ counters were forgotten/);
  });
});
