/**
 * SIGTERM while requests are in flight: the service stops taking new ones, lets the ones it has finish,
 * and exits 0.
 */
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, describe, it } from 'node:test';
import { createRlsClient } from '../../src/index.js';
import { startSluice } from './helpers.js';

describe('graceful shutdown', () => {
  let upstream: Server | undefined;
  after(async () => {
    upstream?.closeAllConnections();
    await new Promise((resolve) => upstream?.close(resolve));
  });

  it('finishes in-flight requests on SIGTERM and exits 0', async () => {
    let arrived = 0;
    let allArrived: () => void = () => {};
    const waiting = new Promise<void>((resolve) => {
      allArrived = resolve;
    });
    const IN_FLIGHT = 20;
    upstream = createServer((req, res) => {
      req.resume();
      if (++arrived === IN_FLIGHT) allArrived();
      // Slow enough that SIGTERM surely lands while every request is still being served.
      setTimeout(() => res.end('done'), 600);
    });
    await new Promise<void>((resolve) => upstream?.listen(0, '127.0.0.1', resolve));
    const port = (upstream.address() as AddressInfo).port;
    const sluice = await startSluice(['--upstream', `http://127.0.0.1:${port}`]);
    const gateway = `http://127.0.0.1:${sluice.proxy}`;

    // gRPC load running through the shutdown: calls already sent complete; later ones fail cleanly.
    const client = createRlsClient(`127.0.0.1:${sluice.grpc}`);
    let grpcOk = 0;
    let loading = true;
    const load = (async () => {
      while (loading) {
        try {
          await client.shouldRateLimit(
            { domain: 'example', descriptors: [{ entries: [{ key: 'api_key', value: 'load' }] }] },
            2000,
          );
          grpcOk++;
        } catch {
          return;
        }
      }
    })();

    const requests = Array.from({ length: IN_FLIGHT }, (_, i) =>
      fetch(`${gateway}/slow/${i}`).then(async (r) => ({ status: r.status, body: await r.text() })),
    );
    await waiting;
    process.kill(sluice.pid, 'SIGTERM');
    const results = await Promise.all(requests);
    assert.deepEqual(
      results.map((r) => r.status),
      Array(IN_FLIGHT).fill(200),
    );
    assert.ok(results.every((r) => r.body === 'done'));
    const exit = await sluice.exited;
    loading = false;
    await load;
    client.close();
    assert.deepEqual(exit, { code: 0, signal: null });
    assert.ok(grpcOk > 0, 'the gRPC load was served');
    const records = sluice.stdout.map((l) => JSON.parse(l) as { msg?: string });
    assert.ok(records.some((r) => r.msg === 'shutting down'));
    assert.equal(records.at(-1)?.msg, 'stopped');
    await assert.rejects(fetch(`${gateway}/after`), 'no new connections after the exit');
  });
});
