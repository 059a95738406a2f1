/**
 * Decides requests live under a rule set and records each decision as a capture record (the memory store, a manual
 * clock at each request's time): the reference a replay must reproduce, for tests and `npm run bench -- replay`.
 */
import { createManualClock, createMemoryStore } from 'sluice';
import { createRulesEngine, type RuleSet } from 'sluice/rules';
import type { CaptureRecord } from './capture-record.js';

/** A request to decide: a capture record without its outcome. */
export type LiveRequest = Omit<CaptureRecord, 'outcome'>;

/** Decides `requests` (in time order) under `ruleSet`, each recorded with its outcome. */
export function captureLive(ruleSet: RuleSet, requests: Iterable<LiveRequest>): CaptureRecord[] {
  const clock = createManualClock(0);
  const engine = createRulesEngine({ ruleSet, store: createMemoryStore({ sweepIntervalMs: 0 }), clock });
  const records: CaptureRecord[] = [];
  for (const request of requests) {
    if (request.t > clock.now()) clock.set(request.t);
    const descriptors = request.descriptors.map((d) => ({ entries: [...d.entries] }));
    const response = engine.decide?.({ domain: request.domain, descriptors, hitsAddend: request.cost });
    if (response === undefined || response instanceof Promise) throw new Error('expected a synchronous decision');
    records.push({ ...request, outcome: response.overallCode });
  }
  return records;
}

/** A seeded trace: `users` keys of one `user` descriptor, gaps up to `maxGapMs`, one request in ten costing 3. */
export function* seededTrace(seed: number, n: number, users: number, maxGapMs: number): Generator<LiveRequest> {
  let s = seed;
  const next = () => {
    s = (s * 1103515245 + 12345) % 2 ** 31;
    return s / 2 ** 31;
  };
  let t = 1_700_000_000_000;
  for (let i = 0; i < n; i++) {
    t += Math.floor(next() * maxGapMs);
    const user = `u${Math.floor(next() * users)}`;
    yield { t, domain: 'api', descriptors: [{ entries: [{ key: 'user', value: user }] }], cost: next() < 0.1 ? 3 : 1 };
  }
}
