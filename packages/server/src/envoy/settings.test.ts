import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { envoyServiceOptions, goDuration, isEnvoyStart } from './settings.js';
import { ENVOY_SETTINGS } from './settings-table.js';

describe('envoy ratelimit settings', () => {
  it('RUNTIME_ROOT or CONFIG_TYPE means "started the envoy way"', () => {
    assert.equal(isEnvoyStart({}), false);
    assert.equal(isEnvoyStart({ RUNTIME_ROOT: '/data' }), true);
    assert.equal(isEnvoyStart({ CONFIG_TYPE: 'FILE' }), true);
    assert.equal(isEnvoyStart({ REDIS_URL: 'redis:6379' }), false);
  });

  it('envoy’s defaults: ports, config path, no headers, log level warn', () => {
    const { options } = envoyServiceOptions({});
    assert.equal(options.port, 8080);
    assert.equal(options.grpcPort, 8081);
    assert.deepEqual(options.config, ['/srv/runtime_data/current/config']);
    assert.equal(options.rateLimitHeaders, 'none');
    assert.equal(options.logLevel, 'warn');
    assert.equal(options.redis, undefined);
    assert.equal(options.grpcMaxConnectionAgeMs, 24 * 3_600_000);
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
    assert.equal(options.logLevel, 'debug');
    assert.deepEqual(options.redis, { username: 'user', password: 'secret', prefix: 'rl_', url: 'redis://redis:6379' });
    assert.equal(options.shadow, true);
    assert.deepEqual(options.rateLimitHeaders, {
      limit: 'RateLimit-Limit',
      remaining: 'X-Left',
      reset: 'RateLimit-Reset',
    });
    assert.deepEqual(warnings, []);
  });

  it('Redis: unix sockets, clusters, TLS; sentinel and memcache are refused with the variable named', () => {
    assert.deepEqual(envoyServiceOptions({ REDIS_URL: '/var/run/redis.sock' }).options.redis, {
      path: '/var/run/redis.sock',
    });
    assert.deepEqual(
      envoyServiceOptions({ REDIS_TYPE: 'cluster', REDIS_URL: 'a:1, b:2', REDIS_TLS: 'true' }).options.redis,
      {
        tls: true,
        cluster: ['a:1', 'b:2'],
      },
    );
    const start = envoyServiceOptions({ REDIS_URL: 'redis:6379' });
    assert.equal(start.options.redis?.url, 'redis://redis:6379');
    assert.match(start.warnings.join('\n'), /REDIS_SOCKET_TYPE/);
    assert.throws(() => envoyServiceOptions({ REDIS_TYPE: 'sentinel', REDIS_URL: 'm,a:1' }), /REDIS_TYPE/);
    assert.throws(() => envoyServiceOptions({ BACKEND_TYPE: 'memcache' }), /BACKEND_TYPE/);
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
    assert.deepEqual(options.grpcTls, {
      certFile: '/tls/cert.pem',
      keyFile: '/tls/key.pem',
      clientCaFile: '/tls/ca.pem',
      clientSan: 'envoy',
    });
    assert.equal(options.xds?.server, 'eg:18001');
    assert.equal(options.xds?.nodeId, 'rl');
    assert.equal(options.config, undefined);
    assert.deepEqual(options.metricsListener, { host: '0.0.0.0', port: 19001, path: '/metrics' });
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
    assert.equal(options.grpcSocket, '/run/rl.sock');
    assert.equal(options.grpcMaxConnectionAgeMs, 300_000);
    assert.equal(options.grpcMaxConnectionAgeGraceMs, 3_600_000);
    const off = envoyServiceOptions({ GRPC_MAX_CONNECTION_AGE: '0', GRPC_MAX_CONNECTION_AGE_GRACE: '0' }).options;
    assert.equal(off.grpcMaxConnectionAgeMs, undefined);
    assert.equal(off.grpcMaxConnectionAgeGraceMs, undefined);
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

  it('a setting that is not supported yet is warned about when set', () => {
    const { warnings } = envoyServiceOptions({ TRACING_ENABLED: 'true', REDIS_PERSECOND: 'true' });
    assert.match(warnings.join('\n'), /TRACING_ENABLED is set but not supported yet/);
    assert.match(warnings.join('\n'), /REDIS_PERSECOND is set/);
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
