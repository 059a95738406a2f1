/**
 * Issue 37, item 8: `sluice serve` with its xDS management server unreachable at start exited 0 after
 * ~0.3 s (it awaited the first config with nothing listening and only an unref'd retry timer pending).
 * Against the real process: it stays up through several reconnect rounds, `/healthcheck` answers 503
 * `no-config` meanwhile, and once a management server appears on that port it turns 200 and the rules
 * apply. With FORCE_START_WITHOUT_INITIAL_CONFIG=true it is ready at once, with no rules.
 */
import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import { after, describe, it } from 'node:test';
import { createRlsClient } from '../../src/index.js';
import { NO_LIMIT, shape, status } from '../envoy/harness.js';
import { domain, limit, ManagementServer, untilReady } from '../envoy/xds-management-server.js';
import { type SluiceProcess, startSluice } from '../integration/helpers.js';

/** Reconnect rounds the process must live through before the management server appears. */
const ROUNDS = 5;

/** A loopback port nothing listens on (bound, then released), for the management server to take later. */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  const { port } = server.address() as { port: number };
  await new Promise((done) => server.close(done));
  return port;
}

const health = async (sluice: SluiceProcess) => {
  const res = await fetch(`http://127.0.0.1:${sluice.http}/healthcheck`);
  return { status: res.status, body: (await res.json()) as { status?: string } };
};

const reconnects = (sluice: SluiceProcess) =>
  sluice.stdout.filter((line) => line.includes('xds: stream to the management server ended')).length;

describe('xDS management server unreachable at start (issue 37: 8)', { timeout: 90_000 }, () => {
  const started: SluiceProcess[] = [];
  let mgmt: ManagementServer | undefined;
  after(async () => {
    for (const sluice of started) await sluice.stop();
    mgmt?.stop();
  });

  it('keeps retrying, not ready (503) until the first config, then ready with its rules', async () => {
    const port = await freePort();
    const sluice = await startSluice(['--envoy-compat', '--log-level', 'info'], {
      CONFIG_TYPE: 'GRPC_XDS_SOTW',
      CONFIG_GRPC_XDS_SERVER_URL: `127.0.0.1:${port}`,
      XDS_CLIENT_BACKOFF_INITIAL_INTERVAL: '100ms',
      XDS_CLIENT_BACKOFF_MAX_INTERVAL: '200ms',
    });
    started.push(sluice);

    // Several refused connections, each followed by a wait: the process must still be there after them.
    await sluice.waitForLog(() => reconnects(sluice) >= ROUNDS, 30_000);
    assert.equal(sluice.child.exitCode, null, 'still running after several reconnect rounds');
    const waiting = await health(sluice);
    assert.equal(waiting.status, 503);
    assert.equal(waiting.body.status, 'no-config');

    mgmt = new ManagementServer();
    mgmt.set('1', [domain('late', [{ key: 'k', rateLimit: limit('HOUR', 2) }])]);
    await mgmt.start(port);
    await untilReady(sluice.http, 30_000);
    assert.equal((await health(sluice)).body.status, 'ok');

    const client = createRlsClient(`127.0.0.1:${sluice.grpc}`);
    try {
      const ask = async () =>
        shape(
          await client.shouldRateLimit(
            { domain: 'late', descriptors: [{ entries: [{ key: 'k', value: 'v' }] }] },
            5000,
          ),
        ).statuses;
      assert.deepEqual(await ask(), [status('OK', 2, 'HOUR', 1)]);
      assert.deepEqual(await ask(), [status('OK', 2, 'HOUR', 0)]);
      assert.deepEqual(await ask(), [status('OVER_LIMIT', 2, 'HOUR', 0)]);
    } finally {
      client.close();
    }
    assert.equal(sluice.child.exitCode, null);
  });

  it('with FORCE_START_WITHOUT_INITIAL_CONFIG=true: ready at once with no rules, and keeps running', async () => {
    const sluice = await startSluice(['--envoy-compat', '--log-level', 'info'], {
      CONFIG_TYPE: 'GRPC_XDS_SOTW',
      CONFIG_GRPC_XDS_SERVER_URL: `127.0.0.1:${await freePort()}`,
      XDS_CLIENT_BACKOFF_INITIAL_INTERVAL: '100ms',
      XDS_CLIENT_BACKOFF_MAX_INTERVAL: '200ms',
      FORCE_START_WITHOUT_INITIAL_CONFIG: 'true',
    });
    started.push(sluice);
    await sluice.waitForLog(() => reconnects(sluice) >= ROUNDS, 30_000);
    assert.equal(sluice.child.exitCode, null);
    assert.equal((await health(sluice)).status, 200);
    const client = createRlsClient(`127.0.0.1:${sluice.grpc}`);
    try {
      const res = await client.shouldRateLimit(
        { domain: 'late', descriptors: [{ entries: [{ key: 'k', value: 'v' }] }] },
        5000,
      );
      assert.deepEqual(shape(res).statuses, [NO_LIMIT]);
    } finally {
      client.close();
    }
  });
});
