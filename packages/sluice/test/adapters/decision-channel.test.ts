/**
 * Middleware decisions on `sluice:decision` (what OpenTelemetry's bridge subscribes to): the plain configuration,
 * which asks the store directly while nobody listens, publishes every decision once someone does.
 */
import assert from 'node:assert/strict';
import diagnostics from 'node:diagnostics_channel';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, it } from 'node:test';
import express from 'express';
import { rateLimit as expressLimit } from '../../src/adapters/express.js';
import { rateLimit as nodeLimit } from '../../src/adapters/node.js';
import { createManualClock } from '../../src/core/clock.js';
import { DECISION_CHANNEL, type DecisionMessage } from '../../src/limiter/decision-channel.js';
import { T0 } from './suite.js';

const messages: DecisionMessage[] = [];
const collect = (message: unknown) => messages.push(message as DecisionMessage);
afterEach(() => {
  diagnostics.unsubscribe(DECISION_CHANNEL, collect);
  messages.length = 0;
});

/** Three requests through a server on loopback: their statuses. */
async function threeRequests(server: ReturnType<typeof createServer>): Promise<number[]> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  try {
    const statuses: number[] = [];
    for (let i = 0; i < 3; i++) statuses.push((await fetch(`http://127.0.0.1:${port}/`)).status);
    return statuses;
  } finally {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
}

/** An Express app limited to two requests a minute. */
function limitedApp() {
  const app = express();
  app.use(expressLimit({ limit: 2, period: '1m', clock: createManualClock(T0) }));
  app.get('/', (_req, res) => {
    res.send('ok');
  });
  return app;
}

describe('middleware decisions on sluice:decision', () => {
  it('node:http, the plain configuration: each request published, allowed then rejected', async () => {
    diagnostics.subscribe(DECISION_CHANNEL, collect);
    const limit = nodeLimit({ limit: 2, period: '1m', clock: createManualClock(T0) });
    const server = createServer(limit((_req, res) => res.end('ok')));
    assert.deepEqual(await threeRequests(server), [200, 200, 429]);
    assert.deepEqual(
      messages.map((m) => m.decision?.allowed),
      [true, true, false],
    );
  });

  it('express: the same, and nothing once nobody listens', async () => {
    diagnostics.subscribe(DECISION_CHANNEL, collect);
    assert.deepEqual(await threeRequests(createServer(limitedApp())), [200, 200, 429]);
    assert.equal(messages.length, 3);
    diagnostics.unsubscribe(DECISION_CHANNEL, collect);
    assert.deepEqual(await threeRequests(createServer(limitedApp())), [200, 200, 429]);
    assert.equal(messages.length, 3, 'no message without a subscriber');
  });
});
