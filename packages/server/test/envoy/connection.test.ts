/**
 * envoy ratelimit's gRPC connection settings against the real `sluice serve`, on both gRPC servers:
 * GRPC_MAX_CONNECTION_AGE (GOAWAY after the age; a client reconnects for its next call),
 * GRPC_MAX_CONNECTION_AGE_GRACE (calls in flight at the GOAWAY go on for the grace, then the connection is
 * cut) and GRPC_UDS (gRPC on a unix socket). A Watch call is the call in flight: it lasts until ended.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Socket, connect as tcpConnect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { type Client, connectivityState, credentials, makeGenericClientConstructor } from '@grpc/grpc-js';
import { createRlsClient, startService } from '../../src/index.js';
import { loadRateLimitService } from '../../src/support/proto.js';
import { createRuntime, startEnvoy } from './harness.js';
import { grpcJsWatch, rawSession, rawWatch } from './health-client.js';

const RULES = {
  'api.yaml': 'domain: api\ndescriptors:\n  - key: k\n    rate_limit: { unit: hour, requests_per_unit: 100 }\n',
};
const ask = { domain: 'api', descriptors: [{ entries: [{ key: 'k', value: 'v' }] }] };

/** A grpc-js RLS client whose channel the test can watch. */
function channelClient(target: string) {
  const Rls = makeGenericClientConstructor(loadRateLimitService(), 'RateLimitService');
  const client = new Rls(target, credentials.createInsecure()) as unknown as Client & {
    ShouldRateLimit(request: unknown, callback: (error: Error | null, response: { overallCode: string }) => void): void;
  };
  return {
    channel: client.getChannel(),
    ask: () =>
      new Promise<string>((resolve, reject) =>
        client.ShouldRateLimit(ask, (error, response) => (error ? reject(error) : resolve(response.overallCode))),
      ),
    close: () => client.close(),
  };
}

/** A TCP proxy to `port` whose connections can be frozen: open, but nothing passes either way (a half-open peer). */
async function freezingProxy(port: number) {
  const upstreams: Socket[] = [];
  const clients: Socket[] = [];
  const server = createServer((client) => {
    const upstream = tcpConnect(port, '127.0.0.1');
    client.on('error', () => {});
    upstream.on('error', () => {});
    client.pipe(upstream);
    upstream.pipe(client);
    clients.push(client);
    upstreams.push(upstream);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as { port: number }).port,
    upstreams,
    freeze() {
      for (const [i, client] of clients.entries()) {
        const upstream = upstreams[i] as Socket;
        client.unpipe(upstream);
        upstream.unpipe(client);
        client.pause();
        // Read and drop what the server sends (its pings), so that its close is still seen here.
        upstream.on('data', () => {});
        upstream.resume();
      }
    },
    close() {
      for (const s of [...clients, ...upstreams]) s.destroy();
      server.close();
    },
  };
}

describe(`gRPC connections`, () => {
  it('GRPC_MAX_CONNECTION_AGE: GOAWAY; the call in flight goes on (grace 1h); a grpc-js client reconnects for its next call', async () => {
    const runtime = createRuntime({ '.keep': '' });
    const svc = await startEnvoy({
      ...runtime.env,
      HEALTHY_WITH_AT_LEAST_ONE_CONFIG_LOADED: 'true',
      GRPC_MAX_CONNECTION_AGE: '300ms',
      GRPC_MAX_CONNECTION_AGE_GRACE: '1h',
    });
    const session = rawSession(`http://127.0.0.1:${svc.sluice.grpc}`);
    const rls = channelClient(`127.0.0.1:${svc.sluice.grpc}`);
    try {
      const goaway = new Promise<number>((resolve) => session.once('goaway', (code) => resolve(code)));
      const watch = rawWatch(session, 'ratelimit');
      assert.equal(await watch.nth(1), 'NOT_SERVING');
      assert.equal(await goaway, 0); // NO_ERROR: a graceful GOAWAY
      // After the GOAWAY the watch still runs: a domain loading reaches it on the old connection.
      runtime.write('api.yaml', RULES['api.yaml']);
      assert.equal(await watch.nth(2), 'SERVING');
      assert.equal(session.destroyed, false);

      // A grpc-js client: its connection is sent away too, and its next call opens a new one.
      assert.equal(await rls.ask(), 'OK');
      const channel = rls.channel;
      let state = channel.getConnectivityState(false);
      while (state === connectivityState.READY) {
        await new Promise<void>((resolve) => channel.watchConnectivityState(state, Infinity, () => resolve()));
        state = channel.getConnectivityState(false);
      }
      assert.equal(await rls.ask(), 'OK');
      assert.equal(channel.getConnectivityState(false), connectivityState.READY);
      watch.cancel();
      await watch.ended;
    } finally {
      session.destroy();
      rls.close();
      assert.equal(await svc.stop(), 0);
      runtime.dispose();
    }
  });

  it('GRPC_MAX_CONNECTION_AGE_GRACE: a call still open after the grace is cut with its connection', async () => {
    const runtime = createRuntime(RULES);
    const svc = await startEnvoy({
      ...runtime.env,
      GRPC_MAX_CONNECTION_AGE: '200ms',
      GRPC_MAX_CONNECTION_AGE_GRACE: '200ms',
    });
    const session = rawSession(`http://127.0.0.1:${svc.sluice.grpc}`);
    try {
      const events: string[] = [];
      session.once('goaway', () => events.push('goaway'));
      const closed = new Promise<void>((resolve) => session.once('close', () => resolve()));
      const watch = rawWatch(session, 'ratelimit');
      assert.equal(await watch.nth(1), 'SERVING');
      const end = await watch.ended;
      events.push('call ended');
      await closed;
      // Cut, not ended: no trailers, no gRPC status; the GOAWAY came first.
      assert.equal(end.code, undefined);
      assert.deepEqual(events, ['goaway', 'call ended']);
      // The service itself goes on.
      const again = rawSession(`http://127.0.0.1:${svc.sluice.grpc}`);
      const next = rawWatch(again, 'ratelimit');
      assert.equal(await next.nth(1), 'SERVING');
      again.destroy();
    } finally {
      session.destroy();
      assert.equal(await svc.stop(), 0);
      runtime.dispose();
    }
  });

  it('keepalive: a connection whose peer stops answering (half-open) is cut, freeing its watch', async () => {
    const service = await startService({
      host: '127.0.0.1',
      http: { port: 0, dashboardDir: false },
      grpc: { port: 0, keepalive: { timeMs: 100, timeoutMs: 100 } },
      observability: { logLevel: 'silent' },
    });
    const proxy = await freezingProxy(service.grpcPort);
    const session = rawSession(`http://127.0.0.1:${proxy.port}`);
    try {
      const watch = rawWatch(session, '');
      assert.equal(await watch.nth(1), 'SERVING');
      const upstream = proxy.upstreams[0] as Socket;
      const cut = new Promise<void>((resolve) => upstream.once('close', () => resolve()));
      proxy.freeze();
      await cut;
      const direct = rawSession(`http://127.0.0.1:${service.grpcPort}`);
      assert.equal(await rawWatch(direct, '').nth(1), 'SERVING');
      direct.destroy();
    } finally {
      session.destroy();
      proxy.close();
      await service.close();
    }
  });

  it('GRPC_UDS: gRPC on a unix socket (decisions, Watch); a stale socket file is replaced; removed at exit', async () => {
    const runtime = createRuntime(RULES);
    const dir = mkdtempSync(join(tmpdir(), 'sluice-uds-'));
    const socket = join(dir, 'ratelimit.sock');
    const first = await startEnvoy({ ...runtime.env, GRPC_UDS: socket });
    // A second service on the same socket is refused while the first listens.
    const clash = await startEnvoy({ ...runtime.env, GRPC_UDS: socket }).then(
      (s) => s,
      (error: Error) => error,
    );
    assert.ok(clash instanceof Error, 'a second service must not take a live socket');
    assert.match(clash.message, /another process is listening on it/);
    const rls = createRlsClient(`unix:${socket}`);
    try {
      assert.equal((await rls.shouldRateLimit(ask)).overallCode, 'OK');
      const watch = grpcJsWatch(`unix:${socket}`, 'ratelimit');
      assert.equal(await watch.nth(1), 'SERVING');
      watch.cancel();
      watch.close();
      const raw = rawSession('http://localhost', socket);
      const w = rawWatch(raw, '');
      assert.equal(await w.nth(1), 'SERVING');
      raw.destroy();
      rls.close();
      assert.equal(await first.stop(), 0);
      assert.equal(existsSync(socket), false);
      // A socket file left by a process that died is replaced.
      const killed = await startEnvoy({ ...runtime.env, GRPC_UDS: socket });
      await killed.sluice.stop('SIGKILL');
      assert.equal(existsSync(socket), true);
      const second = await startEnvoy({ ...runtime.env, GRPC_UDS: socket });
      const rls2 = createRlsClient(`unix:${socket}`);
      assert.equal((await rls2.shouldRateLimit(ask)).overallCode, 'OK');
      rls2.close();
      assert.equal(await second.stop(), 0);
    } finally {
      rls.close();
      await first.stop();
      runtime.dispose();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
