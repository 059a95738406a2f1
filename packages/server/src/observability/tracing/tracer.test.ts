// The tracer on the OpenTelemetry SDK against a real OTLP/HTTP receiver: W3C and B3 parents, sampling, a bounded queue, spans begun before the SDK loaded.
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { Metadata } from '@grpc/grpc-js';
import type { Logger } from '../logger.js';
import { otelHeaders } from './otlp-env.js';
import { createTracer, type Tracer } from './tracer.js';

interface Received {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  attributes: Record<string, unknown>;
  status?: { code?: number; message?: string };
}

const T = '4bf92f3577b34da6a3ce929d0e0e4736';
const S = '00f067aa0ba902b7';

/** An OTLP/HTTP receiver (JSON on /v1/traces); `hold` keeps its answers until `release`. */
function receiver() {
  const spans: Received[] = [];
  const held: ServerResponse[] = [];
  let holding = false;
  const headers: IncomingMessage['headers'][] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      headers.push(req.headers);
      const body = JSON.parse(Buffer.concat(chunks).toString()) as {
        resourceSpans: { scopeSpans: { spans: (Received & { attributes: { key: string; value: object }[] })[] }[] }[];
      };
      for (const rs of body.resourceSpans)
        for (const ss of rs.scopeSpans)
          for (const s of ss.spans)
            spans.push({
              ...s,
              attributes: Object.fromEntries(s.attributes.map((a) => [a.key, Object.values(a.value)[0]])),
            });
      if (holding) held.push(res);
      else res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  return {
    spans,
    headers,
    hold: () => {
      holding = true;
    },
    release: () => {
      holding = false;
      for (const res of held.splice(0)) res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    },
    listen: () =>
      new Promise<number>((r) => server.listen(0, '127.0.0.1', () => r((server.address() as AddressInfo).port))),
    close: () => server.close(),
  };
}

const warnings: unknown[][] = [];
const logger = { warn: (...args: unknown[]) => warnings.push(args), error: () => {} } as unknown as Logger;

describe('tracer (OpenTelemetry SDK, OTLP/HTTP)', () => {
  const collector = receiver();
  let endpoint = '';
  const tracers: Tracer[] = [];
  const make = (extra: Partial<Parameters<typeof createTracer>[0]> = {}) => {
    const tracer = createTracer({
      otlp: { protocol: 'http', endpoint, headers: { 'x-api-key': 'k1' } },
      serviceName: 'unit',
      scheduleMs: 3_600_000,
      logger,
      ...extra,
    });
    tracers.push(tracer);
    return tracer;
  };
  before(async () => {
    endpoint = `http://127.0.0.1:${await collector.listen()}/v1/traces`;
  });
  after(async () => {
    collector.release();
    for (const t of tracers) await t.shutdown();
    collector.close();
  });

  it('continues W3C and B3 (single and multi header) parents, from HTTP headers and gRPC metadata', async () => {
    const tracer = make();
    assert.equal(await tracer.ready, true);
    const md = new Metadata();
    md.set('traceparent', `00-${T}-${S}-01`);
    tracer.start('grpc', md, { 'rpc.system': 'grpc' })?.end({ 'rpc.grpc.status_code': 0 });
    tracer.start('b3', { b3: `${'1'.repeat(32)}-${S}-1` }, {})?.end({});
    tracer.start('b3m', { 'x-b3-traceid': '2'.repeat(32), 'x-b3-spanid': S, 'x-b3-sampled': '1' }, {})?.end({});
    tracer.start('both', { traceparent: `00-${'3'.repeat(32)}-${S}-01`, b3: `${'4'.repeat(32)}-${S}-1` }, {})?.end({});
    tracer.start('bad', { traceparent: `00-${'0'.repeat(32)}-${S}-01` }, {})?.end({}, 'boom');
    await tracer.flush();
    const by = (name: string) => collector.spans.find((s) => s.name === name);
    assert.deepEqual([by('grpc')?.traceId, by('grpc')?.parentSpanId], [T, S]);
    assert.equal(by('grpc')?.attributes['rpc.grpc.status_code'], 0);
    assert.deepEqual([by('b3')?.traceId, by('b3')?.parentSpanId], ['1'.repeat(32), S]);
    assert.equal(by('b3m')?.traceId, '2'.repeat(32));
    assert.equal(by('both')?.traceId, '3'.repeat(32), 'traceparent wins over B3');
    assert.notEqual(by('bad')?.traceId, '0'.repeat(32), 'a malformed parent starts a new trace');
    assert.ok(!by('bad')?.parentSpanId);
    assert.deepEqual(by('bad')?.status, { code: 2, message: 'boom' });
    assert.equal(collector.headers.at(-1)?.['x-api-key'], 'k1');
  });

  it('ParentBased(TraceIdRatioBased): rate 0 records no new trace, a sampled caller’s all the same; an unsampled caller’s none', async () => {
    const tracer = make({ samplingRate: 0 });
    await tracer.ready;
    assert.equal(tracer.start('new', {}, {}), undefined);
    assert.equal(tracer.start('unsampled', { traceparent: `00-${T}-${S}-00` }, {}), undefined);
    assert.notEqual(tracer.start('sampled', { traceparent: `00-${T}-${S}-01` }, {}), undefined);
  });

  it('a span begun while the SDK loads is exported once it has, with its own times', async () => {
    const tracer = make();
    const early = tracer.start('early', { traceparent: `00-${'5'.repeat(32)}-${S}-01` }, { a: 1 });
    assert.ok(early, 'traced before the SDK is there');
    early.end({ b: 2 });
    await tracer.flush();
    const span = collector.spans.find((s) => s.name === 'early');
    assert.deepEqual([span?.traceId, span?.attributes.a, span?.attributes.b], ['5'.repeat(32), 1, 2]);
  });

  it('bounds the queue: with the collector stalled, spans past maxQueue are dropped and the drop is logged', async () => {
    const tracer = make({ maxQueue: 3, maxBatch: 3 });
    await tracer.ready;
    const before = collector.spans.length;
    collector.hold();
    for (let i = 0; i < 10; i++) tracer.start('queued', {}, { i })?.end({});
    const flushed = tracer.flush();
    collector.release();
    await flushed;
    const got = collector.spans.length - before;
    // The SDK reports a drop when the next span finds room.
    tracer.start('after', {}, {})?.end({});
    await tracer.flush();
    assert.ok(got >= 3 && got < 10, `${got} of 10 spans exported`);
    assert.ok(
      warnings.some((w) => JSON.stringify(w).includes('maxQueueSize')),
      'the SDK’s drop warning reaches the log',
    );
  });

  it('OTEL_EXPORTER_OTLP_HEADERS: bounded, and a pair that does not decode is skipped', () => {
    assert.deepEqual(otelHeaders('a=1,b=%zz,c=x%20y,=d'), { a: '1', c: 'x y' });
    assert.equal(Object.keys(otelHeaders(Array.from({ length: 500 }, (_, i) => `h${i}=v`).join(','))).length, 64);
  });
});
