/**
 * The header values are RFC 9651 structured fields and say what the Decision says: for every
 * algorithm, a trace of requests over HTTP is compared with the decisions of a twin limiter (same
 * policy, same clock, its own store), which makes the same decisions.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createManualClock } from '../../src/core/clock.js';
import { ALGORITHMS, isBucketAlgorithm } from '../../src/core/policy.js';
import { createLimiter } from '../../src/limiter/create-limiter.js';
import { createMemoryStore } from '../../src/stores/memory/memory-store.js';
import { nodeHarness } from './harness.js';
import { parseList, StructuredFieldError } from './structured-fields.js';
import { readHeaders, T0 } from './suite.js';

describe('rate-limit headers agree with the decision', () => {
  for (const algorithm of ALGORITHMS) {
    it(algorithm, async () => {
      const clock = createManualClock(T0);
      const bucket = isBucketAlgorithm(algorithm);
      const policy = { algorithm, limit: 3, period: 2500, ...(bucket ? { burst: 4 } : {}) };
      const twin = createLimiter({ ...policy, clock });
      // What is available `t` seconds on: the trace so far replayed on a limiter of its own, then a
      // look (taking nothing) later on. (Not the twin's store: a look ahead lets its keys expire.)
      const times: number[] = [];
      const lookLater = (atMs: number) => {
        const at = createManualClock(T0);
        const replay = createLimiter({ ...policy, clock: at, store: createMemoryStore() });
        for (const t of times) {
          at.set(t);
          replay.checkSync('k');
        }
        at.set(atMs);
        return replay.peek('k');
      };
      const server = await nodeHarness.start({ ...policy, clock, name: `${algorithm} "quoted"` });
      // q is what r counts down from (the bucket for bucket algorithms) and w the time to refill it.
      const quota = bucket ? 4 : 3;
      const windowS = bucket ? 4 : 3;
      let seed = 7;
      const next = () => {
        seed = (seed * 1103515245 + 12345) % 2 ** 31;
        return seed;
      };
      try {
        for (let i = 0; i < 16; i++) {
          clock.advance(next() % 900);
          const res = await fetch(server.url);
          await res.text();
          const d = twin.checkSync('127.0.0.1');
          times.push(clock.now());
          assert.equal(res.status, d.allowed ? 200 : 429, `request ${i}`);
          const facts = readHeaders({ status: res.status, headers: res.headers, body: '' });
          assert.deepEqual(
            { name: facts.name, limit: facts.limit, remaining: facts.remaining, windowS: facts.windowS },
            { name: `${algorithm} "quoted"`, limit: quota, remaining: Math.min(d.remaining, quota), windowS },
            `request ${i}`,
          );
          const retryAfter = res.headers.get('retry-after');
          assert.equal(retryAfter, d.allowed ? null : String(Math.max(1, Math.ceil(d.retryAfterMs / 1000))));
          // t (draft-11): seconds until more quota is available — and never past Retry-After.
          const then = await lookLater(clock.now() + facts.resetS * 1000);
          if (!d.allowed) {
            assert.ok(facts.resetS <= Number(retryAfter), `request ${i}: t=${facts.resetS} ≤ Retry-After`);
            assert.ok(then.allowed, `request ${i}: the rejected request passes t=${facts.resetS} s later`);
          } else if (facts.remaining < quota) {
            assert.ok(
              then.remaining > facts.remaining,
              `request ${i}: more than r=${facts.remaining} after t=${facts.resetS} s`,
            );
          } else {
            assert.equal(facts.resetS, 0, 'a full quota has nothing more to free');
          }
        }
      } finally {
        await server.close();
      }
    });
  }
});

describe('the structured-field parser of these tests', () => {
  it('reads RFC 9651 lists, items and parameters', () => {
    const list = parseList('"a\\"b";q=10;w=60, tok;x, (1 2);p=?1, :aGk=:, 1.5, -3, @1659578233, %"%c3%a9"');
    assert.equal(list.length, 8);
    assert.deepEqual(list[0], {
      value: 'a"b',
      params: new Map<string, unknown>([
        ['q', 10],
        ['w', 60],
      ]),
    });
    assert.deepEqual(list[1], { value: { token: 'tok' }, params: new Map([['x', true]]) });
    assert.deepEqual(list[7], { value: { display: 'é' }, params: new Map() });
  });

  it('refuses what the RFC refuses', () => {
    for (const bad of [
      '"unterminated',
      'a,',
      '"x";Q=1',
      '1234567890123456',
      '"\\x"',
      '"x" "y"',
      '"é"',
      '1.2345',
      '"x";q=',
    ]) {
      assert.throws(() => parseList(bad), StructuredFieldError, bad);
    }
  });
});
