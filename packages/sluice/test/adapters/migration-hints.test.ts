/**
 * Another library's option names, through each adapter: the error names the rate limiter that
 * framework's users come from, and suggests the period of the window they gave.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { rateLimit as expressLimit } from '../../src/adapters/express.js';
import { rateLimit as fastifyLimit } from '../../src/adapters/fastify.js';
import { rateLimit as koaLimit } from '../../src/adapters/koa.js';
import { isSluiceError } from '../../src/core/errors.js';

/** The message of the coded error `build` throws for `option`. */
function messageOf(build: () => unknown, option: string): string {
  let message = '';
  assert.throws(build, (e: unknown) => {
    assert.ok(isSluiceError(e, 'ERR_SLUICE_UNKNOWN_OPTION'), String(e));
    assert.equal(e.option, option);
    message = e.message;
    return true;
  });
  return message;
}

describe("another library's option names", () => {
  it('max names the rate limiter of the framework in use', () => {
    const express = messageOf(() => expressLimit({ max: 5, windowMs: 60_000 } as never), 'max');
    assert.match(express, /express-rate-limit's max is sluice's limit: \{ limit: 5, period: '1m' \}/);
    const fastify = messageOf(() => fastifyLimit({ max: 5, timeWindow: 30_000 } as never), 'max');
    assert.match(fastify, /@fastify\/rate-limit's max is sluice's limit: \{ limit: 5, period: '30s' \}/);
    assert.doesNotMatch(fastify, /express-rate-limit/);
    const koa = messageOf(() => koaLimit({ max: 5 } as never), 'max');
    assert.match(koa, /koa-ratelimit's max/);
  });

  it('the suggested period is the window given, whatever it is', () => {
    for (const [windowMs, period] of [
      [60_000, '1m'],
      [3_600_000, '1h'],
      [90_000, '90s'],
      [1500, '1500ms'],
      [900_000, '15m'],
    ] as const) {
      const message = messageOf(() => expressLimit({ windowMs, limit: 10 } as never), 'windowMs');
      assert.match(message, new RegExp(`\\{ period: '${period}' \\}`), message);
    }
    const fastify = messageOf(() => fastifyLimit({ limit: 10, timeWindow: '2 minutes' } as never), 'timeWindow');
    assert.match(fastify, /period: '2 minutes'/);
  });
});
