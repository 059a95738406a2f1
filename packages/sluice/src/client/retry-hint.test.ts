import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseRateLimitField, parseRetryAfter, parseXRateLimitReset, retryHint } from './retry-hint.js';

const NOW = Date.parse('2026-03-01T12:00:00Z');
const hint = (headers: Record<string, string>) => retryHint(new Headers(headers), NOW);

describe('Retry-After', () => {
  it('reads delay-seconds', () => {
    assert.equal(parseRetryAfter('3', NOW), 3000);
    assert.equal(parseRetryAfter(' 0 ', NOW), 0);
    assert.equal(parseRetryAfter('1.5', NOW), 1500);
  });

  it('reads an HTTP date in each of the three RFC 9110 forms', () => {
    assert.equal(parseRetryAfter('Sun, 01 Mar 2026 12:00:05 GMT', NOW), 5000);
    assert.equal(parseRetryAfter('Sunday, 01-Mar-26 12:00:07 GMT', NOW), 7000);
    assert.equal(parseRetryAfter('Sun Mar  1 12:00:09 2026', NOW), 9000);
  });

  it('a date in the past means now; junk means no hint', () => {
    assert.equal(parseRetryAfter('Sun, 01 Mar 2026 11:00:00 GMT', NOW), 0);
    for (const junk of ['soon', '-1', '', '3s', 'Sun, 99 Foo 2026'])
      assert.equal(parseRetryAfter(junk, NOW), undefined, junk);
    assert.equal(parseRetryAfter(null, NOW), undefined);
  });
});

describe('RateLimit (IETF draft)', () => {
  it('reads t of the structured form', () => {
    assert.equal(parseRateLimitField('"default";r=0;t=5'), 5000);
    assert.equal(parseRateLimitField('default;r=0;t=5'), 5000);
  });

  it('with several policies, waits for the most exhausted one', () => {
    assert.equal(parseRateLimitField('"a";r=5;t=1, "b";r=0;t=30, "c";r=0;t=10'), 30_000);
    assert.equal(parseRateLimitField('"a";r=3;t=1, "b";r=1;t=8'), 8000);
  });

  it('keeps quoted names whole, commas and semicolons included', () => {
    assert.equal(parseRateLimitField('"a,b;c=9";r=0;t=2'), 2000);
    assert.equal(parseRateLimitField('"say \\"hi\\", ok";r=0;t=3'), 3000);
  });

  it('reads reset= of the older dictionary form', () => {
    assert.equal(parseRateLimitField('limit=10, remaining=0, reset=7'), 7000);
  });

  it('gives no hint without t', () => {
    assert.equal(parseRateLimitField('"a";r=0'), undefined);
    assert.equal(parseRateLimitField(''), undefined);
    assert.equal(parseRateLimitField('"a";r=0;t=later'), undefined);
  });
});

describe('X-RateLimit-Reset', () => {
  it('reads delta-seconds', () => assert.equal(parseXRateLimitReset('6', NOW), 6000));
  it('reads Unix seconds (GitHub) and Unix milliseconds', () => {
    assert.equal(parseXRateLimitReset(String(NOW / 1000 + 4), NOW), 4000);
    assert.equal(parseXRateLimitReset(String(NOW + 250), NOW), 250);
    assert.equal(parseXRateLimitReset(String(NOW / 1000 - 60), NOW), 0);
  });
  it('ignores junk', () => assert.equal(parseXRateLimitReset('tomorrow', NOW), undefined));
});

describe('retryHint', () => {
  it('prefers Retry-After, then RateLimit, then RateLimit-Reset, then X-RateLimit-Reset', () => {
    const all = {
      'retry-after': '1',
      ratelimit: '"p";r=0;t=2',
      'ratelimit-reset': '3',
      'x-ratelimit-reset': '4',
    };
    assert.deepEqual(hint(all), { waitMs: 1000, source: 'retry-after' });
    const { 'retry-after': _, ...noRetryAfter } = all;
    assert.deepEqual(hint(noRetryAfter), { waitMs: 2000, source: 'ratelimit' });
    const { ratelimit: __, ...noDraft } = noRetryAfter;
    assert.deepEqual(hint(noDraft), { waitMs: 3000, source: 'ratelimit-reset' });
    assert.deepEqual(hint({ 'x-ratelimit-reset': '4' }), { waitMs: 4000, source: 'x-ratelimit-reset' });
  });

  it('falls through a junk header to the next one, and to nothing', () => {
    assert.deepEqual(hint({ 'retry-after': 'soon', 'x-ratelimit-reset': '2' }), {
      waitMs: 2000,
      source: 'x-ratelimit-reset',
    });
    assert.equal(hint({}), undefined);
  });
});
