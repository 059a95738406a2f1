import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Metadata } from '@grpc/grpc-js';
import { extractParent } from './trace-context.js';
import { createTracer, type SpanRecord, sampledByRatio } from './tracer.js';

const T = '4bf92f3577b34da6a3ce929d0e0e4736';
const S = '00f067aa0ba902b7';

describe('trace context', () => {
  it('W3C traceparent, B3 single and multi header; malformed or zero ids start a new trace', () => {
    assert.deepEqual(extractParent({ traceparent: `00-${T}-${S}-01` }), { traceId: T, spanId: S, sampled: true });
    assert.deepEqual(extractParent({ traceparent: `00-${T}-${S}-00` }), { traceId: T, spanId: S, sampled: false });
    const md = new Metadata();
    md.set('traceparent', `00-${T}-${S}-01`);
    assert.equal(extractParent(md)?.traceId, T);
    assert.deepEqual(extractParent({ b3: `${T}-${S}-0` }), { traceId: T, spanId: S, sampled: false });
    assert.deepEqual(extractParent({ b3: `a3ce929d0e0e4736-${S}` }), {
      traceId: `0000000000000000a3ce929d0e0e4736`,
      spanId: S,
      sampled: undefined,
    });
    assert.deepEqual(extractParent({ 'x-b3-traceid': T, 'x-b3-spanid': S, 'x-b3-sampled': '1' }), {
      traceId: T,
      spanId: S,
      sampled: true,
    });
    for (const bad of [`00-${'0'.repeat(32)}-${S}-01`, `ff-${T}-${S}-01`, `00-${T}-xyz-01`, 'garbage', '']) {
      assert.equal(extractParent({ traceparent: bad }), undefined, bad);
    }
    assert.equal(extractParent(undefined), undefined);
  });

  it('TraceIDRatioBased on the low 63 bits of the trace id, as OpenTelemetry Go', () => {
    assert.equal(sampledByRatio(T, 1), true);
    assert.equal(sampledByRatio(T, 0), false);
    assert.equal(sampledByRatio(`${'f'.repeat(16)}0000000000000000`, 0.001), true);
    assert.equal(sampledByRatio(`${'0'.repeat(16)}ffffffffffffffff`, 0.999), false);
    let kept = 0;
    for (let i = 0; i < 4000; i++) {
      if (
        sampledByRatio(`${'0'.repeat(16)}${((i * 2654435761) % 2 ** 32).toString(16).padStart(8, '0')}00000000`, 0.25)
      )
        kept++;
    }
    assert.ok(kept > 800 && kept < 1200, String(kept));
  });
});

describe('tracer', () => {
  it('bounds the queue: past maxQueue spans are dropped and counted, never queued', async () => {
    const exported: SpanRecord[] = [];
    let release: () => void = () => {};
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    const tracer = createTracer({
      maxQueue: 3,
      maxBatch: 100,
      scheduleMs: 60_000,
      exporter: async (_resource, spans) => {
        await gate;
        exported.push(...spans);
      },
    });
    for (let i = 0; i < 10; i++) tracer.start('call', undefined, {})?.end({ i });
    assert.equal(tracer.dropped, 7);
    release();
    await tracer.shutdown();
    assert.deepEqual(
      exported.map((s) => s.attributes.i),
      [0, 1, 2],
    );
  });
});
