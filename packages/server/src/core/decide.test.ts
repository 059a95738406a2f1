import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createManualClock, isSluiceError, SluiceError, type Store } from 'sluice';
import { createRulesEngine, parseRules, type RateLimitRequest, type RulesEngine } from 'sluice/rules';
import { createDecisionHub, type DecisionEvent } from '../observability/decision-events.js';
import { createDisabledMetrics } from '../observability/metrics.js';
import { createAccessLists } from './access-lists.js';
import { createDecider, type Decided } from './decide.js';

const parsed = parseRules([
  {
    file: 'rules.yaml',
    text: 'domain: d\ndescriptors:\n  - key: ip\n    rate_limit: { unit: second, requests_per_unit: 1 }\n',
  },
]);
if (!parsed.ok) throw new Error('rules');
const RULES = parsed.ruleSet;

const request = (value: string, domain = 'd'): RateLimitRequest => ({
  domain,
  descriptors: [{ entries: [{ key: 'ip', value }] }],
});

/** A decider on `engine`, with the decisions it published and the store latencies it observed. */
function decider(engine: RulesEngine) {
  const hub = createDecisionHub();
  const events: DecisionEvent[] = [];
  hub.subscribe((event) => events.push(event));
  const store: boolean[] = [];
  const metrics = { ...createDisabledMetrics(), observeStore: (_s: number, failed: boolean) => store.push(failed) };
  const lists = createAccessLists();
  return { lists, events, store, decider: createDecider({ engine, lists, hub, metrics, now: () => 5 }) };
}

describe('createDecider', () => {
  it('decideNow answers a memory-store decision at once, as decide() does through a promise', async () => {
    const engine = createRulesEngine({ ruleSet: RULES, clock: createManualClock(0) });
    const d = decider(engine);
    const now = d.decider.decideNow?.(request('a'), 'grpc');
    assert.ok(now !== undefined && !(now instanceof Promise));
    // Published and measured before it returned.
    assert.deepEqual([now.overallCode, d.events.length, d.store], ['OK', 1, [false]]);
    const later = await d.decider.decide(request('a'), 'grpc');
    assert.deepEqual([later.overallCode, later.statuses[0]?.limitRemaining], ['OVER_LIMIT', 0]);
    assert.equal(d.events.at(-1)?.outcome, 'over_limit');
  });

  it('decideNow throws what decide() rejects with: a malformed request, a store failure (counted)', async () => {
    const engine = createRulesEngine({ ruleSet: RULES, clock: createManualClock(0) });
    const d = decider(engine);
    const bad = { domain: '', descriptors: [] } as RateLimitRequest;
    await assert.rejects(d.decider.decide(bad, 'grpc'), (e) => isSluiceError(e));
    assert.throws(
      () => d.decider.decideNow?.(bad, 'grpc'),
      (e) => isSluiceError(e),
    );
    const down = { ...engine.store } as Store;
    const broken = createRulesEngine({
      ruleSet: RULES,
      store: {
        ...down,
        checkMany: () => {
          throw new SluiceError('ERR_SLUICE_STORE_UNAVAILABLE', 'down');
        },
      } as Store,
    });
    const failing = decider(broken);
    assert.throws(() => failing.decider.decideNow?.(request('a'), 'grpc'), /down/);
    await assert.rejects(failing.decider.decide(request('a'), 'grpc'), /down/);
    assert.deepEqual([failing.events, failing.store], [[], [true, true]]);
  });

  it('answers through a promise when the engine has only shouldRateLimit, or when access lists apply', async () => {
    const engine = createRulesEngine({ ruleSet: RULES, clock: createManualClock(0) });
    const promised: RulesEngine = { ...engine, shouldRateLimit: (r) => engine.shouldRateLimit(r) };
    delete (promised as { decide?: unknown }).decide;
    const d = decider(promised);
    const answer = d.decider.decideNow?.(request('a'), 'grpc');
    assert.ok(answer instanceof Promise);
    assert.equal((await answer).overallCode, 'OK');
    const listed = decider(engine);
    listed.lists.add('deny', { key: 'ip', value: 'b' });
    const denied = listed.decider.decideNow?.(request('b'), 'grpc') as Promise<Decided>;
    assert.ok(denied instanceof Promise);
    assert.equal((await denied).overallCode, 'OVER_LIMIT');
  });
});
