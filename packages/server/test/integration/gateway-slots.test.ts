/**
 * The gateway's per-client in-flight slots come back when a client leaves while its decision is still
 * pending on Redis. They did not: the response had closed before it was proxied, so nothing ever gave
 * the slot back, and after 64 such requests (a load generator stopping, impatient clients) every
 * request from that address — every client behind one proxy — was refused with 429 for good.
 */
import assert from 'node:assert/strict';
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { type RedisServerHandle, startRedis } from '../../../../test/helpers/redis-server.js';
import { type SluiceProcess, startSluice, tempFile } from './helpers.js';

const RULES = `domain: slots
http:
  rate_limits:
    - actions: [{ remote_address: {} }]
descriptors:
  - key: remote_address
    rate_limit: { unit: day, requests_per_unit: 1000000 }
`;
const PER_CLIENT = 64;

/** Status of one GET through the gateway. */
async function status(gateway: string): Promise<number> {
  const res = await fetch(`${gateway}/`);
  await res.arrayBuffer();
  return res.status;
}

/** Asks until `want` comes back; fails after `tries` (each answer is immediate: no timing involved). */
async function until(gateway: string, want: number, tries: number, pause = () => Promise.resolve()): Promise<void> {
  let last = 0;
  for (let i = 0; i < tries; i++) {
    last = await status(gateway);
    if (last === want) return;
    await pause();
  }
  assert.fail(`expected ${want} within ${tries} requests, last answer ${last}`);
}

describe('gateway: in-flight slots of clients that leave during a pending decision', { timeout: 60_000 }, () => {
  let redis: RedisServerHandle;
  let upstream: Server;
  let sluice: SluiceProcess;
  let config: ReturnType<typeof tempFile>;
  let gateway: string;

  before(async () => {
    redis = await startRedis();
    upstream = createServer((req, res) => {
      req.resume();
      res.end('ok');
    });
    await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
    config = tempFile('slots.yaml', RULES);
    sluice = await startSluice([
      '--config',
      config.path,
      '--upstream',
      `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`,
      '--redis',
      redis.url,
      '--redis-timeout',
      '20s',
    ]);
    gateway = `http://127.0.0.1:${sluice.proxy}`;
    assert.equal(await status(gateway), 200);
  });
  after(async () => {
    redis?.kill('SIGCONT');
    upstream?.closeAllConnections();
    await new Promise((resolve) => upstream?.close(resolve));
    await sluice?.stop();
    await redis?.stop();
    config?.remove();
  });

  it('gives the slots back, so the address is served again', async () => {
    // Redis paused: every decision waits. Fill the client's slots with requests that then go away.
    redis.kill('SIGSTOP');
    const port = Number(new URL(gateway).port);
    const pending = Array.from({ length: PER_CLIENT }, () => {
      const req = request({ host: '127.0.0.1', port, path: '/', agent: false });
      req.on('error', () => {});
      req.end();
      return req;
    });
    // All 64 are in the gateway, waiting on Redis, once one more is refused for want of a slot.
    await until(gateway, 429, 1000, () => new Promise((r) => setImmediate(r)));
    for (const req of pending) req.destroy();
    redis.kill('SIGCONT');
    // The decisions now complete for clients that are gone; each must give its slot back.
    await until(gateway, 200, 200, () => new Promise((r) => setTimeout(r, 25)));
    const statuses = await Promise.all(Array.from({ length: 20 }, () => status(gateway)));
    assert.deepEqual(new Set(statuses), new Set([200]), 'the address is served, not refused as in flight');
  });
});
