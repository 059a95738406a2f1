// OpenTelemetry metrics export: decisions counted from the start and pushed over OTLP/HTTP to a real receiver; OTEL_* variables read and refused with codes.
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, it } from 'node:test';
import { createDecisionHub, type DecisionEvent } from '../decision-events.js';
import { createDecisionTally } from './decision-tally.js';
import { startOtelMetrics } from './otel-metrics.js';
import { otelMetricsFromEnv } from './otel-metrics-options.js';
import { DECISIONS_METRIC } from './otel-metrics-sdk.js';

type Point = {
  attributes: { key: string; value: Record<string, unknown> }[];
  asInt?: string | number;
  asDouble?: number;
};

/** An OTLP/HTTP metrics receiver: JSON posted to /v1/metrics; keeps the last value of each series. */
async function receiver() {
  const series = new Map<string, number>();
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (req.url !== '/v1/metrics') return void res.writeHead(404).end();
      const body = JSON.parse(Buffer.concat(chunks).toString()) as {
        resourceMetrics: { scopeMetrics: { metrics: { name: string; sum?: { dataPoints: Point[] } }[] }[] }[];
      };
      for (const rm of body.resourceMetrics)
        for (const sm of rm.scopeMetrics)
          for (const m of sm.metrics.filter((x) => x.name === DECISIONS_METRIC))
            for (const p of m.sum?.dataPoints ?? []) {
              const a = Object.fromEntries(p.attributes.map((kv) => [kv.key, Object.values(kv.value)[0]]));
              series.set(
                `${a['sluice.domain']}|${a['sluice.rule']}|${a['sluice.outcome']}`,
                Number(p.asInt ?? p.asDouble),
              );
            }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { series, port: (server.address() as AddressInfo).port, close: () => server.close() };
}

const event = (domain: string, rule: string, outcome: DecisionEvent['outcome']): DecisionEvent => ({
  source: 'grpc',
  domain,
  rule,
  key: 'k=secret',
  outcome,
  atMs: 0,
});

describe('OpenTelemetry metrics (OTLP)', () => {
  it('pushes every decision since the start, by domain, rule and outcome, and never the key', async () => {
    const collector = await receiver();
    const hub = createDecisionHub();
    const options = otelMetricsFromEnv({
      OTEL_METRICS_EXPORTER: 'otlp',
      OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${collector.port}`,
      OTEL_METRIC_EXPORT_INTERVAL: '3600000',
    });
    assert.ok(options);
    const metrics = startOtelMetrics(options, hub);
    // Before the SDK has loaded: counted all the same.
    hub.emit(event('api', 'api.k', 'ok'));
    assert.equal(await metrics.ready, true);
    hub.emit(event('api', 'api.k', 'ok'));
    hub.emit(event('api', 'api.k', 'over_limit'));
    hub.emit(event('', 'policy-chosen-by-a-caller', 'ok'));
    await metrics.close(); // pushes the last counts
    collector.close();
    assert.deepEqual(Object.fromEntries(collector.series), {
      'api|api.k|ok': 2,
      'api|api.k|over_limit': 1,
      '|_adhoc|ok': 1,
    });
  });

  it('bounds its series: past the cap, new ones count under the overflow label', () => {
    const tally = createDecisionTally(2);
    for (const rule of ['a', 'b', 'c', 'd']) tally.count(event('api', rule, 'ok'));
    assert.deepEqual(
      [...tally.rows()].map((r) => [r.rule, r.count]),
      [
        ['a', 1],
        ['b', 1],
        ['_overflow', 2],
      ],
    );
  });

  it('OTEL_* variables: off unless OTEL_METRICS_EXPORTER names otlp; endpoints, protocols; bad values refused with a code', () => {
    assert.equal(otelMetricsFromEnv({}), undefined);
    assert.equal(otelMetricsFromEnv({ OTEL_METRICS_EXPORTER: 'none' }), undefined);
    assert.deepEqual(otelMetricsFromEnv({ OTEL_METRICS_EXPORTER: 'otlp', OTEL_EXPORTER_OTLP_HEADERS: 'a=1' }), {
      protocol: 'http',
      endpoint: 'http://localhost:4318/v1/metrics',
      headers: { a: '1' },
      intervalMs: 60_000,
      timeoutMs: 30_000,
    });
    const grpc = otelMetricsFromEnv({
      OTEL_METRICS_EXPORTER: 'prometheus,otlp',
      OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc',
      OTEL_SERVICE_NAME: 'edge-rl',
    });
    assert.deepEqual([grpc?.protocol, grpc?.endpoint, grpc?.serviceName], ['grpc', 'http://localhost:4317', 'edge-rl']);
    assert.equal(
      otelMetricsFromEnv({ OTEL_METRICS_EXPORTER: 'otlp', OTEL_EXPORTER_OTLP_METRICS_PROTOCOL: 'http/protobuf' })
        ?.protocol,
      'http',
    );
    for (const env of [
      { OTEL_METRICS_EXPORTER: 'zipkin' },
      { OTEL_METRICS_EXPORTER: 'otlp', OTEL_EXPORTER_OTLP_PROTOCOL: 'thrift' },
      { OTEL_METRICS_EXPORTER: 'otlp', OTEL_METRIC_EXPORT_INTERVAL: '-5' },
      { OTEL_METRICS_EXPORTER: 'otlp', OTEL_METRIC_EXPORT_INTERVAL: '1e12' },
      { OTEL_METRICS_EXPORTER: 'otlp', OTEL_EXPORTER_OTLP_METRICS_ENDPOINT: 'file:///etc/passwd' },
      { OTEL_METRICS_EXPORTER: 'otlp', OTEL_EXPORTER_OTLP_METRICS_ENDPOINT: 'not a url' },
    ]) {
      assert.throws(() => otelMetricsFromEnv(env), { code: 'ERR_SLUICE_INVALID_OPTION' }, JSON.stringify(env));
    }
  });
});
