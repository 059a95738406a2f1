// Tests of the gateway's token debts: a settle's extra that did not fit is carried to the key's next request.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createManualClock, createMemoryStore } from 'sluice';
import { createTokenLimiter } from 'sluice/llm';
import { createLlmDebts, reserveOwing } from './gateway-llm-debt.js';

const LIMIT = 1000;
const budget = () => {
  const clock = createManualClock(0);
  const limiter = createTokenLimiter({
    totalTokens: { limit: LIMIT, period: 60_000 },
    store: createMemoryStore(),
    clock,
  });
  return { clock, limiter, debts: createLlmDebts() };
};

describe('gateway llm debts', () => {
  it('a settle past the limit is charged in full by the limiter (its debt): the window serves its limit plus one round of extras', async () => {
    const { clock, limiter, debts } = budget();
    // Each request is reserved at 10 + 90 and reports 40 + 90 (the input estimate missed by 30).
    for (let minute = 0; minute < 3; minute++) {
      clock.set(minute * 60_000);
      let served = 0;
      for (let round = 0; round < 3; round++) {
        const held = [];
        for (let i = 0; i < 20; i++) {
          const r = await reserveOwing(limiter, debts, 'k', { inputTokens: 10, maxOutputTokens: 90 });
          if (r.reservation.allowed) held.push(r);
        }
        for (const r of held) {
          const settled = await r.settle({ inputTokens: 40, outputTokens: 90 });
          assert.ok(settled.ok);
          served += 130;
        }
      }
      // The first round takes the limit in reservations (10 × 100) and settles 30 more each; the debt
      // they leave refuses every later round of the minute. Nothing is left for the gateway to owe.
      const inFlightExtras = (LIMIT / 100) * 30;
      assert.ok(served <= LIMIT + inFlightExtras, `minute ${minute}: served ${served} of ${LIMIT}`);
      assert.equal(debts.size, 0);
    }
  });

  it('keeps a debt it carries when the request carrying it is refused or cancelled', async () => {
    const { limiter, debts } = budget();
    debts.owe('k', { inputTokens: 200, outputTokens: 0 });
    const refused = await reserveOwing(limiter, debts, 'k', { inputTokens: 900, maxOutputTokens: 100 });
    assert.equal(refused.reservation.allowed, false);
    assert.deepEqual(debts.take('k'), { inputTokens: 200, outputTokens: 0 });
    debts.owe('k', { inputTokens: 200, outputTokens: 0 });
    const cancelled = await reserveOwing(limiter, debts, 'k', { inputTokens: 10, maxOutputTokens: 10 });
    assert.equal(cancelled.reservation.allowed, true);
    assert.equal(debts.size, 0);
    assert.ok((await cancelled.cancel()).ok);
    assert.deepEqual(debts.take('k'), { inputTokens: 200, outputTokens: 0 });
  });

  it('bounds the keys it remembers, forgetting the oldest', () => {
    const debts = createLlmDebts(3);
    for (let i = 0; i < 10; i++) debts.owe(`k${i}`, { inputTokens: 1, outputTokens: 0 });
    assert.equal(debts.size, 3);
    assert.deepEqual(debts.take('k0'), { inputTokens: 0, outputTokens: 0 });
    assert.deepEqual(debts.take('k9'), { inputTokens: 1, outputTokens: 0 });
  });
});
