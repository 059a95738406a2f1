// Limiter decisions through @opentelemetry/api into a real SDK with in-memory exporters: the counter's and the span event's attributes, never the key.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import * as api from '@opentelemetry/api';
import { context, metrics, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import {
  AggregationTemporality,
  InMemoryMetricExporter,
  MeterProvider,
  PeriodicExportingMetricReader,
} from '@opentelemetry/sdk-metrics';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { createManualClock } from '../core/clock.js';
import { createLimiter } from './create-limiter.js';
import { connectOpenTelemetry, DECISION_EVENT, observeWithOpenTelemetry, REQUESTS_METRIC } from './opentelemetry.js';

const metricExporter = new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE);
const reader = new PeriodicExportingMetricReader({ exporter: metricExporter, exportIntervalMillis: 3_600_000 });
const meterProvider = new MeterProvider({ readers: [reader] });
const spanExporter = new InMemorySpanExporter();
const tracerProvider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(spanExporter)] });

/** The counter's data points as [attributes, value]. */
async function counted(): Promise<[Record<string, unknown>, number][]> {
  await reader.forceFlush();
  const last = metricExporter.getMetrics().at(-1);
  const metric = last?.scopeMetrics
    .find((s) => s.scope.name === 'sluice')
    ?.metrics.find((m) => m.descriptor.name === REQUESTS_METRIC);
  return (metric?.dataPoints ?? []).map((p) => [p.attributes, p.value as number]);
}

describe('OpenTelemetry', () => {
  before(() => {
    assert.equal(connectOpenTelemetry(), undefined, 'without an SDK nothing is loaded');
    context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
    metrics.setGlobalMeterProvider(meterProvider);
    trace.setGlobalTracerProvider(tracerProvider);
  });
  after(async () => {
    await meterProvider.shutdown();
    await tracerProvider.shutdown();
  });

  it('counts each check by policy and result, and marks the request’s span, with no key anywhere', async () => {
    const limiter = createLimiter({
      name: 'api',
      clock: createManualClock(0),
      limits: [
        { name: 'second', limit: 1, period: '1s' },
        { name: 'day', limit: 100, period: '1d' },
      ],
    });
    assert.equal(await connectOpenTelemetry(), true);
    const tracer = trace.getTracer('test');
    await tracer.startActiveSpan('GET /things', async (span) => {
      await limiter.check('user:secret-1');
      await limiter.check('user:secret-1');
      span.end();
    });
    assert.deepEqual(await counted(), [
      [{ 'sluice.rate_limiting.policy': 'api', 'sluice.rate_limiting.result': 'acquired' }, 1],
      [
        {
          'sluice.rate_limiting.policy': 'api',
          'sluice.rate_limiting.result': 'rejected',
          'sluice.rate_limiting.limit': 'second',
        },
        1,
      ],
    ]);
    const [span] = spanExporter.getFinishedSpans();
    assert.deepEqual(
      span?.events.map((e) => [e.name, e.attributes?.['sluice.rate_limiting.result']]),
      [
        [DECISION_EVENT, 'acquired'],
        [DECISION_EVENT, 'rejected'],
      ],
    );
    const exported = JSON.stringify([await counted(), span?.events]);
    assert.ok(!exported.includes('secret'), 'the key is never an attribute');
  });

  it('observeWithOpenTelemetry(api) after the automatic connection adds no second subscriber', async () => {
    observeWithOpenTelemetry(api);
    const limiter = createLimiter({ name: 'once', limit: 5, period: '1m', clock: createManualClock(0) });
    limiter.checkSync('k');
    const points = (await counted()).filter(([a]) => a['sluice.rate_limiting.policy'] === 'once');
    assert.deepEqual(points, [
      [{ 'sluice.rate_limiting.policy': 'once', 'sluice.rate_limiting.result': 'acquired' }, 1],
    ]);
  });

  it('records an error with its code, and an unnamed limiter under its limits’ names', async () => {
    const limiter = createLimiter({ limit: 5, period: '1m', clock: createManualClock(0) });
    limiter.checkSync('k');
    assert.throws(() => limiter.checkSync('k', { cost: -1 }), { code: 'ERR_SLUICE_INVALID_COST' });
    const points = await counted();
    assert.deepEqual(
      points.filter(([a]) => a['sluice.rate_limiting.policy'] === 'default'),
      [
        [{ 'sluice.rate_limiting.policy': 'default', 'sluice.rate_limiting.result': 'acquired' }, 1],
        [
          {
            'sluice.rate_limiting.policy': 'default',
            'sluice.rate_limiting.result': 'error',
            'error.type': 'ERR_SLUICE_INVALID_COST',
          },
          1,
        ],
      ],
    );
  });
});
