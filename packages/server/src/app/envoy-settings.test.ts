import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { envoyServiceOptions, goDuration, isEnvoyStart } from './envoy-settings.js';
import { ENVOY_SETTINGS } from './envoy-settings-table.js';
import type { ServiceOptions, StoreOptions } from './service-options.js';

/** The store options envoy's environment gave (never a store instance). */
const storeOf = (options: ServiceOptions) => (options.store ?? {}) as StoreOptions;

describe('envoy ratelimit settings', () => {
  it('RUNTIME_ROOT or CONFIG_TYPE means "started the envoy way"', () => {
    assert.equal(isEnvoyStart({}), false);
    assert.equal(isEnvoyStart({ RUNTIME_ROOT: '/data' }), true);
    assert.equal(isEnvoyStart({ CONFIG_TYPE: 'FILE' }), true);
    assert.equal(isEnvoyStart({ REDIS_URL: 'redis:6379' }), false);
  });

  it('envoy’s defaults: ports, config path, no headers, log level warn', () => {
    const { options } = envoyServiceOptions({});
    assert.equal(options.http?.port, 8080);
    assert.equal(options.grpc?.port, 8081);
    assert.deepEqual(options.config, ['/srv/runtime_data/current/config']);
    assert.equal(options.headers, 'none');
    assert.equal(options.observability?.logLevel, 'warn');
    assert.equal(storeOf(options).redis, undefined);
    assert.equal(options.grpc?.maxConnectionAgeMs, 24 * 3_600_000);
  });

  it('a Helm chart’s settings', () => {
    const { options, warnings } = envoyServiceOptions({
      RUNTIME_ROOT: '/data',
      RUNTIME_SUBDIRECTORY: 'ratelimit',
      RUNTIME_IGNOREDOTFILES: 'true',
      USE_STATSD: 'false',
      LOG_LEVEL: 'DEBUG',
      REDIS_SOCKET_TYPE: 'tcp',
      REDIS_URL: 'redis:6379',
      REDIS_AUTH: 'user:secret',
      CACHE_KEY_PREFIX: 'rl_',
      SHADOW_MODE: 'True',
      LIMIT_RESPONSE_HEADERS_ENABLED: '1',
      LIMIT_REMAINING_HEADER: 'X-Left',
    });
    assert.deepEqual(options.config, ['/data/ratelimit/config']);
    assert.equal(options.observability?.logLevel, 'debug');
    assert.deepEqual(storeOf(options).redis, {
      username: 'user',
      password: 'secret',
      prefix: 'rl_',
      localCache: false,
      url: 'redis://redis:6379',
    });
    assert.equal(options.shadow, true);
    assert.deepEqual(options.headers, {
      limit: 'RateLimit-Limit',
      remaining: 'X-Left',
      reset: 'RateLimit-Reset',
    });
    assert.deepEqual(warnings, []);
  });

  it('Redis: unix sockets, clusters, TLS; memcache is refused with the variable named', () => {
    assert.deepEqual(storeOf(envoyServiceOptions({ REDIS_URL: '/var/run/redis.sock' }).options).redis, {
      localCache: false,
      path: '/var/run/redis.sock',
    });
    assert.deepEqual(
      storeOf(envoyServiceOptions({ REDIS_TYPE: 'cluster', REDIS_URL: 'a:1, b:2', REDIS_TLS: 'true' }).options).redis,
      {
        tls: true,
        localCache: false,
        cluster: ['a:1', 'b:2'],
      },
    );
    const start = envoyServiceOptions({ REDIS_URL: 'redis:6379' });
    assert.equal(storeOf(start.options).redis?.url, 'redis://redis:6379');
    assert.match(start.warnings.join('\n'), /REDIS_SOCKET_TYPE/);
    assert.throws(() => envoyServiceOptions({ BACKEND_TYPE: 'memcache' }), /BACKEND_TYPE/);
  });

  it('Sentinel: master name and Sentinels from REDIS_URL, REDIS_SENTINEL_AUTH for the Sentinels', () => {
    const { options } = envoyServiceOptions({
      REDIS_TYPE: 'SENTINEL',
      REDIS_URL: 'mymaster,s1:26379, s2:26379',
      REDIS_AUTH: 'pw',
      REDIS_SENTINEL_AUTH: 'admin:spw',
    });
    assert.deepEqual(storeOf(options).redis, {
      password: 'pw',
      localCache: false,
      sentinel: { name: 'mymaster', sentinels: ['s1:26379', 's2:26379'], username: 'admin', password: 'spw' },
    });
    for (const url of ['mymaster', ',s1:1', 'mymaster,/tmp/s.sock', 'mymaster,s1']) {
      assert.throws(
        () => envoyServiceOptions({ REDIS_TYPE: 'sentinel', REDIS_URL: url }),
        /REDIS_URL: .* is not <master name>,<sentinel host:port>/,
      );
    }
    assert.throws(() => envoyServiceOptions({ REDIS_TYPE: 'replica', REDIS_URL: 'a:1' }), /REDIS_TYPE: 'replica'/);
  });

  it('REDIS_PERSECOND: a second Redis with its own settings; TLS files shared; the local cache in both', () => {
    const { options, warnings } = envoyServiceOptions({
      REDIS_SOCKET_TYPE: 'tcp',
      REDIS_URL: 'main:6379',
      REDIS_PERSECOND: 'true',
      REDIS_PERSECOND_TYPE: 'cluster',
      REDIS_PERSECOND_URL: 'ps1:6379,ps2:6379',
      REDIS_PERSECOND_AUTH: 'ps',
      REDIS_PERSECOND_TLS: 'true',
      REDIS_PERSECOND_TIMEOUT: '250ms',
      REDIS_TLS_CACERT: '/tls/ca.pem',
      REDIS_TLS_CLIENT_CERT: '/tls/c.pem',
      REDIS_TLS_CLIENT_KEY: '/tls/c.key',
      REDIS_TLS_SKIP_HOSTNAME_VERIFICATION: 'true',
      LOCAL_CACHE_SIZE_IN_BYTES: '10485760',
      CACHE_KEY_PREFIX: 'rl:',
    });
    assert.deepEqual(warnings, []);
    assert.deepEqual(storeOf(options).redis, {
      prefix: 'rl:',
      localCache: { maxKeys: 81_920 },
      url: 'redis://main:6379',
    });
    assert.deepEqual(storeOf(options).redisPerSecond, {
      password: 'ps',
      tls: { caFile: '/tls/ca.pem', certFile: '/tls/c.pem', keyFile: '/tls/c.key', skipHostnameVerification: true },
      prefix: 'rl:',
      timeoutMs: 250,
      localCache: { maxKeys: 81_920 },
      cluster: ['ps1:6379', 'ps2:6379'],
    });
    // freecache's smallest cache is 512 KiB: so is sluice's.
    assert.deepEqual(
      storeOf(envoyServiceOptions({ REDIS_URL: '/s', LOCAL_CACHE_SIZE_IN_BYTES: '1000' }).options).redis?.localCache,
      { maxKeys: 4096 },
    );
    assert.throws(
      () => envoyServiceOptions({ REDIS_URL: 'a:1', REDIS_PERSECOND: 'true' }),
      /REDIS_PERSECOND_URL: REDIS_PERSECOND=true needs/,
    );
    assert.throws(
      () => envoyServiceOptions({ REDIS_URL: 'a:1', REDIS_TLS: 'true', REDIS_TLS_CLIENT_CERT: '/c.pem' }),
      /REDIS_TLS_CLIENT_KEY: a client certificate needs both/,
    );
    assert.match(
      envoyServiceOptions({ REDIS_URL: '/s', REDIS_PERSECOND_URL: 'b:1' }).warnings.join('\n'),
      /REDIS_PERSECOND_URL is set but REDIS_PERSECOND is not true/,
    );
    assert.match(
      envoyServiceOptions({ REDIS_PERSECOND: 'true', REDIS_PERSECOND_URL: 'b:1' }).warnings.join('\n'),
      /REDIS_URL is not set.*REDIS_PERSECOND is ignored/,
    );
  });

  it('TLS, xDS and the Prometheus listener', () => {
    const { options } = envoyServiceOptions({
      GRPC_SERVER_USE_TLS: 'true',
      GRPC_SERVER_TLS_CERT: '/tls/cert.pem',
      GRPC_SERVER_TLS_KEY: '/tls/key.pem',
      GRPC_CLIENT_TLS_CACERT: '/tls/ca.pem',
      GRPC_CLIENT_TLS_SAN: 'envoy',
      CONFIG_TYPE: 'GRPC_XDS_SOTW',
      CONFIG_GRPC_XDS_SERVER_URL: 'eg:18001',
      CONFIG_GRPC_XDS_NODE_ID: 'rl',
      USE_PROMETHEUS: 'true',
      PROMETHEUS_ADDR: ':19001',
    });
    assert.deepEqual(options.grpc?.tls, {
      certFile: '/tls/cert.pem',
      keyFile: '/tls/key.pem',
      clientCaFile: '/tls/ca.pem',
      clientSan: 'envoy',
    });
    assert.equal(options.xds?.server, 'eg:18001');
    assert.equal(options.xds?.nodeId, 'rl');
    assert.equal(options.config, undefined);
    assert.deepEqual(options.observability?.metricsListener, { host: '0.0.0.0', port: 19001, path: '/metrics' });
    assert.throws(() => envoyServiceOptions({ GRPC_SERVER_USE_TLS: 'true' }), /GRPC_SERVER_TLS_CERT/);
  });

  it('values envoy would refuse are refused, naming the variable', () => {
    assert.throws(() => envoyServiceOptions({ SHADOW_MODE: 'yes' }), /SHADOW_MODE: 'yes' is not a boolean/);
    assert.throws(() => envoyServiceOptions({ PORT: '99999' }), /PORT/);
    assert.throws(() => envoyServiceOptions({ CONFIG_TYPE: 'HTTP' }), /CONFIG_TYPE/);
    assert.throws(() => envoyServiceOptions({ LOG_LEVEL: 'loud' }), /LOG_LEVEL/);
    assert.throws(() => envoyServiceOptions({ GRPC_MAX_CONNECTION_AGE: '10 minutes' }), /GRPC_MAX_CONNECTION_AGE/);
  });

  it('GRPC_UDS and the connection age (0 = no limit, as grpc-go)', () => {
    const { options } = envoyServiceOptions({ GRPC_UDS: '/run/rl.sock', GRPC_MAX_CONNECTION_AGE: '5m' });
    assert.equal(options.grpc?.socket, '/run/rl.sock');
    assert.equal(options.grpc?.maxConnectionAgeMs, 300_000);
    assert.equal(options.grpc?.maxConnectionAgeGraceMs, 3_600_000);
    const off = envoyServiceOptions({ GRPC_MAX_CONNECTION_AGE: '0', GRPC_MAX_CONNECTION_AGE_GRACE: '0' }).options;
    assert.equal(off.grpc?.maxConnectionAgeMs, undefined);
    assert.equal(off.grpc?.maxConnectionAgeGraceMs, undefined);
  });

  it('TRACING_*: OTLP endpoint and headers from OpenTelemetry’s variables; a bad protocol is refused', () => {
    const { options } = envoyServiceOptions({
      TRACING_ENABLED: 'true',
      TRACING_EXPORTER_PROTOCOL: 'grpc',
      TRACING_SAMPLING_RATE: '0.25',
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4317',
      OTEL_EXPORTER_OTLP_HEADERS: 'x-token=a%20b',
    });
    assert.deepEqual(options.observability?.tracing, {
      otlp: { protocol: 'grpc', endpoint: 'http://collector:4317', headers: { 'x-token': 'a b' } },
      serviceName: 'RateLimit',
      samplingRate: 0.25,
    });
    assert.equal(
      envoyServiceOptions({ TRACING_ENABLED: 'true' }).options.observability?.tracing?.otlp.endpoint,
      'http://localhost:4318/v1/traces',
    );
    assert.equal(envoyServiceOptions({}).options.observability?.tracing, undefined);
    assert.throws(
      () => envoyServiceOptions({ TRACING_ENABLED: 'true', TRACING_EXPORTER_PROTOCOL: 'zipkin' }),
      /TRACING_EXPORTER_PROTOCOL/,
    );
  });

  it('Go durations', () => {
    const d = (v: string) => goDuration({ X: v }, 'X', -1);
    assert.equal(d('10s'), 10_000);
    assert.equal(d('1h30m'), 5_400_000);
    assert.equal(d('150us'), 1);
    assert.equal(d('0'), 0);
    assert.equal(d('1.5m'), 90_000);
    assert.throws(() => d('10'));
  });

  it('no envoy setting is left "not yet": each is honoured, or not applicable and why', () => {
    assert.deepEqual(
      ENVOY_SETTINGS.filter((s) => s.status === 'not yet').map((s) => s.name),
      [],
    );
  });

  it('docs/envoy.md lists every setting with the status the code gives it', () => {
    const page = readFileSync(new URL('../../../../docs/envoy.md', import.meta.url), 'utf8');
    for (const setting of ENVOY_SETTINGS) {
      const row = page.split('\n').find((line) => line.startsWith(`| \`${setting.name}\` |`));
      assert.ok(row, `docs/envoy.md has no row for ${setting.name}`);
      assert.ok(row.includes(`| ${setting.status} |`), `${setting.name}: the docs must say '${setting.status}'`);
    }
    assert.equal(new Set(ENVOY_SETTINGS.map((s) => s.name)).size, ENVOY_SETTINGS.length);
  });
});
