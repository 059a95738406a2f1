/** envoy ratelimit's stats: stats keys from rule identities, bounded keys, statsd datagrams and the Prometheus mapping. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createEnvoyStats, HIT, MAX_KEY_LENGTH, OVERFLOW_KEY } from './envoy-stats.js';
import { createResponseTimeHistogram, mapCounter, renderEnvoyPrometheus } from './prometheus-names.js';
import { keyOfEntries, keyOfRuleId, sanitizeStatName, tagSuffix } from './stat-key.js';
import { drainLines, packDatagrams } from './statsd-sink.js';

describe('envoy stats', () => {
  it('stats keys as envoy builds them', () => {
    assert.equal(keyOfRuleId('api|k=v/user'), 'api.k_v.user');
    assert.equal(keyOfRuleId('my%7Cdomain|path=%2Fa'), 'my|domain.path_/a');
    assert.equal(keyOfRuleId('api|override#5/MINUTE'), undefined);
    assert.equal(
      keyOfEntries('api', [
        { key: 'k', value: 'v' },
        { key: 'e', value: '' },
      ]),
      'api.k_v.e',
    );
    assert.equal(sanitizeStatName('api.ip_10.0.0.1:80|x\ny'), 'api.ip_10_0_0_1_80_x_y');
    assert.equal(tagSuffix({ zone: 'eu.1', env: 'prod' }), '.__env=prod.__zone=eu_1');
  });

  it('keys past the cap or too long share the overflow key; the overflow key takes no slot', () => {
    const stats = createEnvoyStats({ maxSeries: 2 });
    assert.equal(stats.hitsOf('x'.repeat(MAX_KEY_LENGTH + 1)).key, OVERFLOW_KEY);
    assert.equal(stats.hitsOf('a.b').key, 'a.b');
    assert.equal(stats.hitsOf('a.c').key, 'a.c');
    assert.equal(stats.hitsOf('a.d').key, OVERFLOW_KEY);
    assert.equal(stats.overflowed, 2);
  });

  it('statsd lines: deltas since the last drain, zeros skipped, timers as |ms; datagrams stay under the MTU', () => {
    const stats = createEnvoyStats({ maxTimerSamples: 1 });
    const hits = stats.hitsOf('api.k').counters;
    (hits[HIT.total_hits] as { pending: number }).pending += 3;
    stats.request(2);
    stats.request(5);
    assert.equal(stats.dropped, 1, 'the second sample is past the buffer');
    assert.deepEqual(drainLines(stats, '.__env=prod'), [
      'ratelimit.service.rate_limit.api.k.total_hits.__env=prod:3|c',
      'ratelimit_server.ShouldRateLimit.total_requests.__env=prod:2|c',
      'ratelimit_server.ShouldRateLimit.response_time.__env=prod:2|ms',
    ]);
    assert.deepEqual(drainLines(stats, ''), []);
    const many = Array.from({ length: 100 }, (_, i) => `ratelimit.service.rate_limit.api.k${i}.total_hits:1|c`);
    const datagrams = packDatagrams(many);
    assert.ok(datagrams.length > 1);
    for (const d of datagrams) assert.ok(d.length <= 1432);
    assert.equal(datagrams.map((d) => d.toString()).join('\n'), many.join('\n'));
  });

  it("Prometheus names as upstream's default_mapper.yaml maps them", () => {
    assert.deepEqual(mapCounter('ratelimit.service.rate_limit.api.k_v.total_hits'), {
      name: 'ratelimit_service_rate_limit_total_hits',
      labels: [
        ['domain', 'api'],
        ['key1', 'k_v'],
      ],
    });
    assert.deepEqual(mapCounter('ratelimit.service.rate_limit.api.a.b.c.over_limit').labels, [
      ['domain', 'api'],
      ['key1', 'a'],
      ['key2', 'b'],
    ]);
    assert.equal(
      mapCounter('ratelimit.service.call.should_rate_limit.redis_error').name,
      'ratelimit_service_should_rate_limit_error',
    );
    assert.equal(
      mapCounter('ratelimit.service.rate_limit.x.domain_not_found').name,
      'ratelimit_service_rate_limit_x_domain_not_found',
    );
    const stats = createEnvoyStats();
    stats.count('configLoadSuccess');
    const h = createResponseTimeHistogram();
    h.observe(7);
    const text = renderEnvoyPrometheus(stats, h, { env: 'prod' });
    assert.match(text, /^ratelimit_service_config_load_success\{env="prod"\} 1$/m);
    assert.match(
      text,
      /^ratelimit_service_response_time_seconds_bucket\{grpc_method="ShouldRateLimit",le="0.01",env="prod"\} 1$/m,
    );
    assert.match(
      text,
      /^ratelimit_service_response_time_seconds_bucket\{grpc_method="ShouldRateLimit",le="0.005",env="prod"\} 0$/m,
    );
  });
});
