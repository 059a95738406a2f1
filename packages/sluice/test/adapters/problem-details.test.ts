/**
 * 429s as RFC 9457 problem details through real HTTP on every adapter: a client that accepts
 * `application/problem+json` is told which policies it broke; others keep the default body and custom bodies.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createManualClock } from '../../src/core/clock.js';
import type { RateLimitOptions } from '../../src/http/index.js';
import { HARNESSES } from './harness.js';
import { T0 } from './suite.js';

const PROBLEM = { accept: 'application/problem+json, application/json;q=0.5' };

async function get(url: string, headers: Record<string, string> = {}) {
  const res = await fetch(url, { headers });
  return { status: res.status, type: res.headers.get('content-type') ?? '', body: await res.text() };
}

function twoLimits(clock: ReturnType<typeof createManualClock>): RateLimitOptions<unknown> {
  return {
    clock,
    limits: [
      { name: 'per-minute', limit: 3, period: '1m' },
      { name: 'per-second', limit: 1, period: '1s' },
    ],
  };
}

for (const harness of HARNESSES) {
  describe(`problem details: ${harness.name}`, () => {
    it('names every violated policy for a client that accepts problem+json', async () => {
      const clock = createManualClock(T0);
      const server = await harness.start(twoLimits(clock));
      try {
        assert.equal((await get(server.url, PROBLEM)).status, 200);
        const second = await get(server.url, PROBLEM);
        assert.equal(second.status, 429);
        assert.match(second.type, /^application\/problem\+json/);
        const problem = JSON.parse(second.body);
        assert.equal(problem.type, 'https://iana.org/assignments/http-problem-types#quota-exceeded');
        assert.equal(problem.status, 429);
        assert.equal(problem.code, 'RATE_LIMIT_EXCEEDED');
        assert.equal(problem.retry_after, 1);
        assert.deepEqual(problem['violated-policies'], ['per-second']);
        assert.deepEqual(problem.policies, [{ name: 'per-second', limit: 1, remaining: 0, reset: 1 }]);
        // Spend the minute too: then both policies are broken, and both are named.
        clock.advance(1000);
        assert.equal((await get(server.url)).status, 200);
        clock.advance(1000);
        assert.equal((await get(server.url)).status, 200);
        const both = JSON.parse((await get(server.url, PROBLEM)).body);
        assert.deepEqual(both['violated-policies'], ['per-minute', 'per-second']);
      } finally {
        await server.close();
      }
    });

    it('keeps the default JSON body for other clients, and a custom message as the detail', async () => {
      const clock = createManualClock(T0);
      const server = await harness.start({ clock, limit: 1, period: '1m', message: 'Slow down.' });
      try {
        await get(server.url);
        const plain = await get(server.url, { accept: 'application/json' });
        assert.match(plain.type, /^application\/json/);
        assert.equal(JSON.parse(plain.body).error.message, 'Slow down.');
        const refused = await get(server.url, { accept: 'application/problem+json;q=0, */*' });
        assert.match(refused.type, /^application\/json/, 'q=0 refuses problem details');
        const problem = JSON.parse((await get(server.url, PROBLEM)).body);
        assert.equal(problem.detail, 'Slow down.');
        assert.deepEqual(problem['violated-policies'], ['default']);
      } finally {
        await server.close();
      }
    });

    it('a custom body wins over problem details', async () => {
      const clock = createManualClock(T0);
      const body = () => ({ mine: true });
      const server = await harness.start({ clock, limit: 1, period: '1m', body });
      try {
        await get(server.url);
        const reply = await get(server.url, PROBLEM);
        assert.equal(reply.status, 429);
        assert.deepEqual(JSON.parse(reply.body), { mine: true });
      } finally {
        await server.close();
      }
    });
  });
}
