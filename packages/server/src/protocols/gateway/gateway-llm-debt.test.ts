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
  it('makes the tokens a window could not take wait in the next: served never outruns the limit', async () => {
    const { clock, limiter, debts } = budget();
    let served = 0;
    let admitted = 0;
    // Each request is reserved at 10 + 90 and reports 40 + 90 (the input estimate missed by 30).
    for (let minute = 0; minute < 5; minute++) {
      clock.set(minute * 60_000);
      const held = [];
      for (let i = 0; i < 20; i++) {
        const r = await reserveOwing(limiter, debts, 'k', { inputTokens: 10, maxOutputTokens: 90 });
        if (r.reservation.allowed) held.push(r);
      }
      for (const r of held) {
        await r.settle({ inputTokens: 40, outputTokens: 90 });
        served += 130;
      }
      admitted += held.length;
    }
    // Without the debt each minute admits 10 and serves 1,300: 30 % over. With it the five minutes
    // serve at most 5 limits plus the extras of one minute's requests in flight.
    const inFlightExtras = (LIMIT / 100) * 30;
    assert.ok(served <= 5 * LIMIT + inFlightExtras, `served ${served} in 5 minutes of ${LIMIT} (${admitted} admitted)`);
  });

  it('keeps the debt when the request carrying it is refused or cancelled', async () => {
    const { limiter, debts } = budget();
    const first = await reserveOwing(limiter, debts, 'k', { inputTokens: 900, maxOutputTokens: 100 });
    await first.settle({ inputTokens: 900, outputTokens: 300 });
    assert.deepEqual(debts.take('k'), { inputTokens: 200, outputTokens: 0 });
    debts.owe('k', { inputTokens: 200, outputTokens: 0 });
    const refused = await reserveOwing(limiter, debts, 'k', { inputTokens: 1, maxOutputTokens: 1 });
    assert.equal(refused.reservation.allowed, false);
    assert.equal(debts.size, 1);
  });

  it('bounds the keys it remembers, forgetting the oldest', () => {
    const debts = createLlmDebts(3);
    for (let i = 0; i < 10; i++) debts.owe(`k${i}`, { inputTokens: 1, outputTokens: 0 });
    assert.equal(debts.size, 3);
    assert.deepEqual(debts.take('k0'), { inputTokens: 0, outputTokens: 0 });
    assert.deepEqual(debts.take('k9'), { inputTokens: 1, outputTokens: 0 });
  });
});
