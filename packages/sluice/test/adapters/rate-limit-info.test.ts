/**
 * `req.rateLimit` carries express-rate-limit's `used` and `resetTime` besides sluice's own fields, so a
 * handler written for express-rate-limit reads the same numbers.
 */
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { it } from 'node:test';
import express from 'express';
import { rateLimit } from '../../src/adapters/express.js';

it("req.rateLimit has express-rate-limit's used and resetTime", async () => {
  const app = express();
  app.use(rateLimit({ limit: 5, period: '1m' }));
  app.get('/', (req, res) => {
    const info = req.rateLimit;
    res.json({ used: info?.used, remaining: info?.remaining, resetTime: info?.resetTime.getTime(), json: info });
  });
  const server = createServer(app).listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  try {
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
    await (await fetch(url)).arrayBuffer();
    const before = Date.now();
    const body = (await (await fetch(url)).json()) as {
      used: number;
      remaining: number;
      resetTime: number;
      json: { used: number };
    };
    assert.equal(body.used, 2);
    assert.equal(body.remaining, 3);
    assert.equal(body.json.used, 2, 'toJSON includes used');
    // A fixed window of a minute, aligned to the clock: more quota at the next minute boundary.
    const boundary = Math.ceil(before / 60_000) * 60_000;
    assert.ok(Math.abs(body.resetTime - boundary) <= 1500, `${body.resetTime} vs ${boundary}`);
  } finally {
    server.close();
  }
});
