/**
 * Redis failures in envoy mode, against the real `sluice serve` over real redis-server processes: a
 * Sentinel failover, Sentinels that cannot be reached, that answer garbage or do not know the master,
 * a per-second Redis that goes down while the main one stays up, and a Redis TLS certificate for another
 * host. The service keeps answering: decisions a failed Redis should make get the failure policy
 * (fail-closed by default: gRPC UNAVAILABLE, which Envoy's `failure_mode_deny` then decides on), the
 * others are made as usual, and every failure is logged once with the Redis it concerns.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { ServiceError } from '@grpc/grpc-js';
import { type RedisSentinelHandle, startRedisSentinel } from '../../../../test/helpers/redis-sentinel.js';
import { freePort, type RedisServerHandle, startRedis } from '../../../../test/helpers/redis-server.js';
import { unique } from '../integration/helpers.js';
import { createRuntime, type EnvoyService, FIXTURES, type Runtime, shape, startEnvoy, status } from './harness.js';
import { createPki } from './pki.js';
import { PASSWORD } from './redis-layouts.js';

/** The gRPC error of a request expected to fail. */
async function failure(request: Promise<unknown>): Promise<ServiceError> {
  try {
    await request;
  } catch (error) {
    return error as ServiceError;
  }
  assert.fail('expected the request to fail');
}

/** Asks until `accept` takes the answer (a Redis coming back, a failover) — waits on state, not on time. */
async function eventually<T>(ask: () => Promise<T>, accept: (value: T) => boolean, what: string): Promise<T> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const value = await ask().catch(() => undefined);
    if (value !== undefined && accept(value)) return value;
    if (Date.now() > deadline) assert.fail(`never: ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function health(svc: EnvoyService): Promise<number> {
  return (await fetch(`http://127.0.0.1:${svc.sluice.http}/healthcheck`)).status;
}

const ENV = { REDIS_SOCKET_TYPE: 'tcp', REDIS_TIMEOUT: '2s', USE_STATSD: 'false' };

describe('envoy mode: Redis failures', () => {
  let runtime: Runtime;
  before(() => {
    runtime = createRuntime({}, [join(FIXTURES, 'runtime')]);
  });
  after(() => runtime?.dispose());

  for (const overTls of [false, true]) {
    describe(`a Sentinel failover${overTls ? ', everything over TLS' : ''}`, () => {
      let setup: RedisSentinelHandle;
      let svc: EnvoyService;
      let dir: string | undefined;
      before(async () => {
        let tlsEnv = {};
        let tls: { cert: string; key: string; ca: string } | undefined;
        if (overTls) {
          dir = mkdtempSync(join(tmpdir(), 'sluice-sentinel-tls-'));
          const pki = createPki(dir);
          const ca = pki.ca('ca');
          tls = { ...pki.leaf('redis', 'ca', 'IP:127.0.0.1'), ca };
          tlsEnv = { REDIS_TLS: 'true', REDIS_TLS_CACERT: ca };
        }
        setup = await startRedisSentinel({
          password: PASSWORD,
          sentinels: 2,
          ...(tls === undefined ? {} : { tls: { cert: tls.cert, key: tls.key, ca: tls.ca } }),
        });
        svc = await startEnvoy({
          ...runtime.env,
          ...ENV,
          ...tlsEnv,
          REDIS_TYPE: 'sentinel',
          REDIS_URL: setup.envoyUrl,
          REDIS_AUTH: PASSWORD,
        });
      });
      after(async () => {
        assert.equal(await svc?.stop(), 0);
        await setup?.stop();
        if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
      });

      it('decisions move to the promoted replica, which kept the counts', async () => {
        const key = unique('fo');
        for (let i = 0; i < 5; i++) await svc.ask('another', [[['key3', key]]]);
        assert.deepEqual(shape(await svc.ask('another', [[['key3', key]]])).statuses, [status('OK', 10, 'HOUR', 4)]);
        // (failover() waits until the replica has every write before promoting it.)
        await setup.failover();
        const res = await eventually(
          () => svc.ask('another', [[['key3', key]]]),
          (r) => r.overallCode === 'OK',
          'a decision after the failover',
        );
        assert.deepEqual(shape(res).statuses, [status('OK', 10, 'HOUR', 3)]);
        assert.equal(await health(svc), 200);
      });
    });
  }

  describe('Sentinels that cannot help', () => {
    let garbage: Server;
    let unreachable: number;
    let sentinel: RedisSentinelHandle;
    before(async () => {
      unreachable = await freePort();
      // Something that is not Redis: a line of garbage for anything sent.
      garbage = createServer((socket) => {
        socket.on('data', () => socket.write('HTTP/1.1 400 not redis\r\n\r\n'));
        socket.on('error', () => {});
      });
      await new Promise<void>((r) => garbage.listen(0, '127.0.0.1', r));
      sentinel = await startRedisSentinel();
    });
    after(async () => {
      await new Promise((r) => garbage.close(r));
      await sentinel?.stop();
    });

    const cases: [string, () => string, RegExp][] = [
      ['unreachable', () => `mymaster,127.0.0.1:${unreachable}`, /All sentinels are unreachable/],
      [
        'answering garbage',
        () => `mymaster,127.0.0.1:${(garbage.address() as { port: number }).port}`,
        /All sentinels are unreachable/,
      ],
      ['not knowing the master', () => `othermaster,127.0.0.1:${sentinel.sentinels[0]?.port}`, /No such master/],
    ];
    for (const [what, url, logged] of cases) {
      it(`${what}: the service starts, answers UNAVAILABLE, reports unhealthy and logs why`, async () => {
        const svc = await startEnvoy({ ...runtime.env, ...ENV, REDIS_TYPE: 'sentinel', REDIS_URL: url() });
        try {
          const error = await failure(svc.ask('another', [[['key2', unique('s')]]]));
          assert.equal(error.code, 14, error.message);
          // A request no rule limits needs no Redis and is answered.
          assert.equal((await svc.ask('foo', [[['hello', 'world']]])).overallCode, 'OK');
          assert.equal(await health(svc), 503);
          const line = await svc.sluice.waitForLog((r) => r.msg === 'redis error');
          assert.equal(line.code, 'ERR_SLUICE_STORE_UNAVAILABLE');
          assert.match(String(line.err), logged);
          // One line per failure, not one per retry.
          assert.equal(svc.sluice.stdout.filter((l) => l.includes('"msg":"redis error"')).length, 1);
        } finally {
          assert.equal(await svc.stop(), 0);
        }
      });
    }
  });

  describe('the per-second Redis down while the main one is up', () => {
    let main: RedisServerHandle;
    let second: RedisServerHandle;
    let svc: EnvoyService;
    before(async () => {
      [main, second] = await Promise.all([startRedis(), startRedis()]);
      svc = await startEnvoy({
        ...runtime.env,
        ...ENV,
        REDIS_URL: `127.0.0.1:${main.port}`,
        REDIS_PERSECOND: 'true',
        REDIS_PERSECOND_SOCKET_TYPE: 'tcp',
        REDIS_PERSECOND_URL: `127.0.0.1:${second.port}`,
      });
    });
    after(async () => {
      assert.equal(await svc?.stop(), 0);
      await Promise.all([main?.stop(), second?.stop()]);
    });

    it('other limits are decided as usual; per-second ones fail closed, naming the per-second Redis', async () => {
      const key = unique('ps');
      assert.equal((await svc.ask('another', [[['key2', key]]])).overallCode, 'OK');
      second.kill();
      const error = await eventually(
        () => failure(svc.ask('basic', [[['key1', key]]])),
        () => true,
        'a per-second decision to fail',
      );
      assert.equal(error.code, 14);
      assert.match(error.details, /per-second Redis/);
      // The minute limit still counts: 20 - 2.
      assert.deepEqual(shape(await svc.ask('another', [[['key2', key]]])).statuses, [status('OK', 20, 'MINUTE', 18)]);
      // A request needing both Redis fails as a whole, and the main one keeps no count of it.
      assert.equal((await failure(svc.ask('basic', [[['key1', key]], [['one_per_minute', key]]]))).code, 14);
      assert.deepEqual(shape(await svc.ask('basic', [[['one_per_minute', key]]])).statuses, [
        status('OK', 1, 'MINUTE', 0),
      ]);
      assert.equal(await health(svc), 503);
      const logged = await svc.sluice.waitForLog((r) => r.msg === 'redis error' && r.redis === 'per-second');
      assert.ok(logged.err);
    });

    it('the per-second Redis coming back heals the service without a restart', async () => {
      second = await startRedis({ port: second.port });
      const key = unique('heal');
      const res = await eventually(
        () => svc.ask('basic', [[['key1', key]]]),
        (r) => r.overallCode === 'OK',
        'per-second decisions after the restart',
      );
      assert.deepEqual(shape(res).statuses, [status('OK', 50, 'SECOND', 49)]);
      await eventually(
        () => health(svc),
        (s) => s === 200,
        'healthy again',
      );
    });
  });

  it('a per-second Redis unreachable at start: the service starts, per-minute limits work', async () => {
    const main = await startRedis();
    const svc = await startEnvoy({
      ...runtime.env,
      ...ENV,
      REDIS_URL: `127.0.0.1:${main.port}`,
      REDIS_PERSECOND: 'true',
      REDIS_PERSECOND_SOCKET_TYPE: 'tcp',
      REDIS_PERSECOND_URL: `127.0.0.1:${await freePort()}`,
    });
    try {
      const key = unique('cold');
      assert.deepEqual(shape(await svc.ask('another', [[['key2', key]]])).statuses, [status('OK', 20, 'MINUTE', 19)]);
      const error = await failure(svc.ask('basic', [[['key1', key]]]));
      assert.equal(error.code, 14);
      assert.match(error.details, /^per-second Redis: /);
      assert.equal(await health(svc), 503);
      const line = await svc.sluice.waitForLog((r) => r.msg === 'redis error' && r.redis === 'per-second');
      assert.match(String(line.err), /ECONNREFUSED/);
    } finally {
      assert.equal(await svc.stop(), 0);
      await main.stop();
    }
  });

  describe('Redis TLS with a certificate for another host', () => {
    let dir: string;
    let redis: RedisServerHandle;
    let tlsPort: number;
    let ca: string;
    before(async () => {
      dir = mkdtempSync(join(tmpdir(), 'sluice-redis-tls-'));
      const pki = createPki(dir);
      ca = pki.ca('ca');
      const cert = pki.leaf('redis', 'ca', 'DNS:redis.elsewhere');
      tlsPort = await freePort();
      redis = await startRedis({
        args: [
          '--tls-port',
          String(tlsPort),
          '--tls-cert-file',
          cert.cert,
          '--tls-key-file',
          cert.key,
          '--tls-ca-cert-file',
          ca,
          '--tls-auth-clients',
          'no',
        ],
      });
    });
    after(async () => {
      await redis?.stop();
      rmSync(dir, { recursive: true, force: true });
    });
    const tlsEnv = () => ({
      ...runtime.env,
      ...ENV,
      REDIS_URL: `127.0.0.1:${tlsPort}`,
      REDIS_TLS: 'true',
      REDIS_TLS_CACERT: ca,
    });

    it('is refused (UNAVAILABLE, the name mismatch logged) unless REDIS_TLS_SKIP_HOSTNAME_VERIFICATION', async () => {
      const svc = await startEnvoy(tlsEnv());
      try {
        assert.equal((await failure(svc.ask('another', [[['key2', unique('t')]]]))).code, 14);
        const line = await svc.sluice.waitForLog((r) => r.msg === 'redis error');
        assert.match(String(line.err), /redis\.elsewhere|altnames|Hostname/i);
      } finally {
        assert.equal(await svc.stop(), 0);
      }
    });

    it('the chain is still checked with REDIS_TLS_SKIP_HOSTNAME_VERIFICATION: a CA not given is refused', async () => {
      const svc = await startEnvoy({
        ...tlsEnv(),
        REDIS_TLS_CACERT: '',
        REDIS_TLS_SKIP_HOSTNAME_VERIFICATION: 'true',
      });
      try {
        assert.equal((await failure(svc.ask('another', [[['key2', unique('t')]]]))).code, 14);
        const line = await svc.sluice.waitForLog((r) => r.msg === 'redis error');
        assert.match(String(line.err), /self.signed|unable to verify|local issuer/i);
      } finally {
        assert.equal(await svc.stop(), 0);
      }
    });

    it('a missing REDIS_TLS_CACERT file stops the start, naming it', async () => {
      await assert.rejects(
        startEnvoy({ ...tlsEnv(), REDIS_TLS_CACERT: join(dir, 'missing.pem') }),
        /redis\.tls\.caFile: cannot read .*missing\.pem.*ENOENT/,
      );
    });
  });
});
