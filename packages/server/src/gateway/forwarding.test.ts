import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { forwardableRaw } from './forwarding.js';

describe('forwardableRaw', () => {
  it('keeps end-to-end header lines as the upstream sent them and appends the rate-limit headers', () => {
    const raw = ['Content-Type', 'text/plain', 'Set-Cookie', 'a=1', 'Set-Cookie', 'b=2', 'ETag', '"x"'];
    assert.deepEqual(forwardableRaw(raw, { 'x-ratelimit-limit': '10' }), [...raw, 'x-ratelimit-limit', '10']);
  });

  it('drops hop-by-hop headers, in any case, and those the Connection header names', () => {
    const raw = [
      'Connection',
      'X-Secret, Keep-Alive',
      'Keep-Alive',
      'timeout=5',
      'TRANSFER-ENCODING',
      'chunked',
      'x-secret',
      'hop',
      'Upgrade',
      'h2c',
      'Proxy-Authenticate',
      'Basic',
      'Trailer',
      'Expires',
      'Te',
      'trailers',
      'Vary',
      'Accept',
    ];
    assert.deepEqual(forwardableRaw(raw, {}), ['Vary', 'Accept']);
  });

  it("replaces the upstream's own rate-limit headers with the gateway's", () => {
    const raw = ['X-RateLimit-Remaining', '999', 'Retry-After', '60', 'Content-Length', '2'];
    assert.deepEqual(forwardableRaw(raw, { 'x-ratelimit-remaining': '4', 'retry-after': '1' }), [
      'Content-Length',
      '2',
      'x-ratelimit-remaining',
      '4',
      'retry-after',
      '1',
    ]);
  });

  it('does not mistake a header named like an object property for a rate-limit header', () => {
    assert.deepEqual(forwardableRaw(['constructor', 'x'], {}), ['constructor', 'x']);
  });
});
