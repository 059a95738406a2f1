/**
 * `grpc.health.v1.Health/Watch` against the real `sluice serve` in envoy mode, on both gRPC servers: the
 * status at once, each change (config arriving, shutdown), SERVICE_UNKNOWN for names the server does not
 * know (as grpc-go's health server, which envoy ratelimit registers, answers), and a hostile client that
 * opens more watches than allowed and never reads them: bounded, and everyone else is still served.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { status as grpcStatus } from '@grpc/grpc-js';
import { createRlsClient } from '../../src/index.js';
import { createRuntime, startEnvoy } from './harness.js';
import { grpcJsWatch, rawSession, rawWatch } from './health-client.js';

const RULES = {
  'api.yaml': 'domain: api\ndescriptors:\n  - key: k\n    rate_limit: { unit: hour, requests_per_unit: 5 }\n',
};

describe(`grpc.health.v1.Health/Watch`, () => {
  it('sends the status, then NOT_SERVING when the service shuts down, then ends the call UNAVAILABLE', async () => {
    const runtime = createRuntime(RULES);
    const svc = await startEnvoy(runtime.env);
    try {
      const address = `127.0.0.1:${svc.sluice.grpc}`;
      const watches = ['', 'ratelimit', 'envoy.service.ratelimit.v3.RateLimitService'].map((name) =>
        grpcJsWatch(address, name),
      );
      const unknown = grpcJsWatch(address, 'no.such.Service');
      for (const w of watches) assert.equal(await w.nth(1), 'SERVING');
      assert.equal(await unknown.nth(1), 'SERVICE_UNKNOWN');
      // The watch does not hold the shutdown: the process exits 0 within its grace period.
      assert.equal(await svc.stop(), 0);
      for (const w of watches) {
        assert.equal(await w.nth(2), 'NOT_SERVING');
        assert.deepEqual(w.statuses, ['SERVING', 'NOT_SERVING']);
        const end = await w.ended;
        assert.equal(end.code, grpcStatus.UNAVAILABLE);
        assert.match(end.details ?? '', /shutting down/);
        w.close();
      }
      // An unknown service stays unknown; its call ends too.
      assert.equal((await unknown.ended).code, grpcStatus.UNAVAILABLE);
      assert.deepEqual(unknown.statuses, ['SERVICE_UNKNOWN']);
      unknown.close();
    } finally {
      await svc.stop();
      runtime.dispose();
    }
  });

  it('HEALTHY_WITH_AT_LEAST_ONE_CONFIG_LOADED: NOT_SERVING, then SERVING when a domain loads (raw HTTP/2 client)', async () => {
    const runtime = createRuntime({ '.keep': '' });
    const svc = await startEnvoy({ ...runtime.env, HEALTHY_WITH_AT_LEAST_ONE_CONFIG_LOADED: 'true' });
    const session = rawSession(`http://127.0.0.1:${svc.sluice.grpc}`);
    try {
      const watch = rawWatch(session, 'ratelimit');
      assert.equal(await watch.nth(1), 'NOT_SERVING');
      runtime.write('api.yaml', RULES['api.yaml']);
      assert.equal(await watch.nth(2), 'SERVING');
      watch.cancel();
      await watch.ended;
    } finally {
      session.destroy();
      assert.equal(await svc.stop(), 0);
      runtime.dispose();
    }
  });

  it('a client opening watches past the caps, never reading them: refused RESOURCE_EXHAUSTED, bounded, others served', async () => {
    const runtime = createRuntime(RULES);
    const svc = await startEnvoy(runtime.env);
    const authority = `http://127.0.0.1:${svc.sluice.grpc}`;
    // 64 connections x 17 watches from one address: 16 per connection are allowed, 64 per address.
    const sessions = Array.from({ length: 64 }, () => rawSession(authority));
    const rls = createRlsClient(`127.0.0.1:${svc.sluice.grpc}`);
    try {
      const hostile = sessions.flatMap((s) => Array.from({ length: 17 }, () => rawWatch(s, 'ratelimit', false)));
      const answers = await Promise.all(hostile.map((w) => w.headers));
      const refused = answers.filter((h) => h['grpc-status'] !== undefined);
      assert.equal(answers.length - refused.length, 64);
      assert.equal(refused.length, 64 * 17 - 64);
      for (const h of refused) assert.equal(Number(h['grpc-status']), grpcStatus.RESOURCE_EXHAUSTED);

      // Everyone else: decisions and Check answer; a further watch from the same address is refused with a
      // clear status (another address's is served: test/abuse/grpc-health-abuse.test.ts).
      const decided = await rls.shouldRateLimit({
        domain: 'api',
        descriptors: [{ entries: [{ key: 'k', value: 'v' }] }],
      });
      assert.equal(decided.overallCode, 'OK');
      const other = rawSession(authority);
      const extra = rawWatch(other, 'ratelimit');
      assert.equal((await extra.ended).code, grpcStatus.RESOURCE_EXHAUSTED);

      // The hostile client leaves: its slots are free again.
      for (const s of sessions) s.destroy();
      let accepted: string | undefined;
      for (let attempt = 0; attempt < 500 && accepted === undefined; attempt++) {
        const w = rawWatch(other, 'ratelimit');
        const h = await w.headers;
        if (h['grpc-status'] === undefined) accepted = await w.nth(1);
        else await w.ended;
      }
      assert.equal(accepted, 'SERVING');
      other.destroy();
    } finally {
      for (const s of sessions) s.destroy();
      rls.close();
      assert.equal(await svc.stop(), 0);
      runtime.dispose();
    }
  });
});
