// Tests of what the gateway settles an exchange at: reported usage, what passed, or the reserved output when cut.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createUsageTap } from 'sluice/llm';
import { usageToSettle } from './gateway-llm-usage.js';

const request = { body: Buffer.alloc(0), inputTokens: 25, maxOutputTokens: 500 };
const delta = (text: string) => `data: {"choices":[{"index":0,"delta":{"content":"${text}"}}]}\n\n`;
/** The reading of an OpenAI stream of `events` (usage last when `usage` is given). */
function readingOf(events: string[], usage?: { prompt_tokens: number; completion_tokens: number }) {
  const tap = createUsageTap({ provider: 'openai' });
  for (const e of events) tap.push(Buffer.from(e));
  if (usage !== undefined) tap.push(Buffer.from(`data: {"choices":[],"usage":${JSON.stringify(usage)}}\n\n`));
  return tap.end();
}

describe('gateway llm usage to settle', () => {
  it('the reported usage, however the exchange ended', () => {
    const reading = readingOf([delta('abcd')], { prompt_tokens: 40, completion_tokens: 7 });
    const expected = { inputTokens: 40, outputTokens: 7 };
    assert.deepEqual(usageToSettle(reading, request, { status: 200, ended: true, sent: true }), expected);
    assert.deepEqual(usageToSettle(reading, request, { status: 200, ended: false, sent: true }), expected);
  });

  it('a stream the upstream ended without usage: the estimate and what passed, exactly', () => {
    const reading = readingOf([delta('abcd'), delta('efgh'), delta('ijkl')]);
    const usage = usageToSettle(reading, request, { status: 200, ended: true, sent: true });
    assert.deepEqual(usage, { inputTokens: 25, outputTokens: 3 });
  });

  it('a stream cut before its usage: the estimate and the reserved output (the upstream ran past the cut)', () => {
    const reading = readingOf([delta('abcd')]);
    const usage = usageToSettle(reading, request, { status: 200, ended: false, sent: true });
    assert.deepEqual(usage, { inputTokens: 25, outputTokens: 500 });
    // An upstream that ignored max_tokens and sent more before the cut is charged what passed.
    const long = readingOf([delta('x'.repeat(4000))]);
    assert.deepEqual(usageToSettle(long, request, { status: 200, ended: false, sent: true }), {
      inputTokens: 25,
      outputTokens: 1000,
    });
  });

  it('no answer: the reservation when the upstream had the request, a cancel when it never did', () => {
    assert.deepEqual(usageToSettle(undefined, request, { status: 0, ended: false, sent: true }), {
      inputTokens: 25,
      outputTokens: 500,
    });
    assert.equal(usageToSettle(undefined, request, { status: 0, ended: false, sent: false }), undefined);
  });

  it('an error answer with nothing produced is charged nothing beyond its request', () => {
    const reading = readingOf(['{"error":{"message":"bad"}}']);
    const zero = { inputTokens: 0, outputTokens: 0 };
    assert.deepEqual(usageToSettle(reading, request, { status: 400, ended: true, sent: true }), zero);
    assert.deepEqual(usageToSettle(reading, request, { status: 429, ended: false, sent: true }), zero);
  });
});
