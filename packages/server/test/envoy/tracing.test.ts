/**
 * envoy ratelimit's TRACING_* settings against the real `sluice serve` in envoy mode: spans of decisions
 * exported by the OpenTelemetry SDK over OTLP to receivers written here (OTLP/HTTP JSON on /v1/traces, and OTLP/gRPC
 * TraceService/Export), the caller's trace continued from `traceparent` or B3, the caller's "not sampled"
 * honoured, TRACING_SAMPLING_RATE for new traces, and the resource attributes. No span is waited for by
 * time: an export is awaited as an event, and "no span" is shown by a later span's export (spans are
 * exported in the order they end).
 */
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, it } from 'node:test';
import {
  type Client,
  credentials,
  Metadata,
  makeGenericClientConstructor,
  Server,
  ServerCredentials,
  type ServerUnaryCall,
  type sendUnaryData,
} from '@grpc/grpc-js';
import protobuf from 'protobufjs';
import { loadRateLimitService, PROTO_DIR } from '../../src/support/proto.js';
import { postJson } from '../integration/helpers.js';
import { createRuntime, startEnvoy } from './harness.js';

const RULES = {
  'api.yaml': 'domain: api\ndescriptors:\n  - key: k\n    rate_limit: { unit: hour, requests_per_unit: 100 }\n',
};
const REQUEST = { domain: 'api', descriptors: [{ entries: [{ key: 'k', value: 'v' }] }] };

interface Span {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes: Record<string, unknown>;
}

/** Spans received, with the resource they came with; `find` waits until one matches. */
function collector() {
  const spans: Span[] = [];
  const resources: Record<string, unknown>[] = [];
  const waiters = new Set<() => void>();
  const flat = (kvs: { key: string; value: Record<string, unknown> }[] = []) =>
    Object.fromEntries(kvs.map((kv) => [kv.key, Object.values(kv.value)[0]]));
  return {
    spans,
    resources,
    add(body: {
      resourceSpans: {
        resource: { attributes: { key: string; value: Record<string, unknown> }[] };
        scopeSpans: { spans: (Omit<Span, 'attributes'> & { attributes: never })[] }[];
      }[];
    }) {
      for (const rs of body.resourceSpans) {
        resources.push(flat(rs.resource.attributes));
        for (const ss of rs.scopeSpans) for (const s of ss.spans) spans.push({ ...s, attributes: flat(s.attributes) });
      }
      for (const w of waiters) w();
    },
    find: (predicate: (s: Span) => boolean) =>
      new Promise<Span>((resolve) => {
        const check = () => {
          const found = spans.find(predicate);
          if (found) {
            waiters.delete(check);
            resolve(found);
          }
        };
        waiters.add(check);
        check();
      }),
  };
}

/** An OTLP/HTTP receiver: JSON bodies posted to /v1/traces, and the metric names posted to /v1/metrics. */
async function httpReceiver() {
  const spans = collector();
  const metricNames = new Set<string>();
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (req.headers['content-type'] !== 'application/json') return void res.writeHead(415).end();
      const body = JSON.parse(Buffer.concat(chunks).toString());
      if (req.url === '/v1/traces') spans.add(body);
      else if (req.url === '/v1/metrics') {
        for (const rm of body.resourceMetrics ?? [])
          for (const sm of rm.scopeMetrics ?? []) for (const m of sm.metrics ?? []) metricNames.add(m.name);
      } else return void res.writeHead(404).end();
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { ...spans, metricNames, port: (server.address() as AddressInfo).port, close: () => server.close() };
}

/** An OTLP/gRPC receiver: TraceService/Export, decoded from the shipped proto. */
async function grpcReceiver() {
  const spans = collector();
  const root = protobuf.loadSync(`${PROTO_DIR}opentelemetry/proto/collector/trace/v1/trace_service.proto`);
  const type = root.lookupType('opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest');
  const server = new Server();
  server.addService(
    {
      Export: {
        path: '/opentelemetry.proto.collector.trace.v1.TraceService/Export',
        requestStream: false,
        responseStream: false,
        requestSerialize: (b: Buffer) => b,
        requestDeserialize: (b: Buffer) => b,
        responseSerialize: (b: Buffer) => b,
        responseDeserialize: (b: Buffer) => b,
      },
    },
    {
      Export(call: ServerUnaryCall<Buffer, Buffer>, callback: sendUnaryData<Buffer>) {
        const body = type.toObject(type.decode(call.request), { longs: String, bytes: String, defaults: false });
        const hex = (b64: unknown) =>
          typeof b64 === 'string' ? Buffer.from(b64, 'base64').toString('hex') : undefined;
        for (const rs of body.resourceSpans ?? []) {
          for (const ss of rs.scopeSpans ?? []) {
            for (const s of ss.spans ?? []) {
              s.traceId = hex(s.traceId);
              s.spanId = hex(s.spanId);
              if (s.parentSpanId !== undefined) s.parentSpanId = hex(s.parentSpanId);
            }
          }
        }
        spans.add(body as never);
        callback(null, Buffer.alloc(0));
      },
    },
  );
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync('127.0.0.1:0', ServerCredentials.createInsecure(), (e, p) => (e ? reject(e) : resolve(p))),
  );
  return { ...spans, port, close: () => server.forceShutdown() };
}

/** ShouldRateLimit with gRPC metadata. */
function rlsWithMetadata(port: number) {
  const Rls = makeGenericClientConstructor(loadRateLimitService(), 'RateLimitService');
  const client = new Rls(`127.0.0.1:${port}`, credentials.createInsecure()) as unknown as Client & {
    ShouldRateLimit(r: unknown, m: Metadata, cb: (e: Error | null, res: { overallCode: string }) => void): void;
  };
  return {
    ask(headers: Record<string, string>) {
      const metadata = new Metadata();
      for (const [k, v] of Object.entries(headers)) metadata.set(k, v);
      return new Promise<string>((resolve, reject) =>
        client.ShouldRateLimit(REQUEST, metadata, (e, r) => (e ? reject(e) : resolve(r.overallCode))),
      );
    },
    close: () => client.close(),
  };
}

const TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const PARENT = '00f067aa0ba902b7';
const id = (n: number) => n.toString(16).padStart(32, '0');

describe(`envoy tracing settings`, () => {
  it('TRACING_ENABLED over OTLP/HTTP: a server span per call, in the caller’s trace; not-sampled callers honoured; /json too', async () => {
    const receiver = await httpReceiver();
    const runtime = createRuntime(RULES);
    const svc = await startEnvoy({
      ...runtime.env,
      TRACING_ENABLED: 'true',
      TRACING_SERVICE_NAME: 'ratelimit-test',
      TRACING_SERVICE_NAMESPACE: 'edge',
      TRACING_SERVICE_INSTANCE_ID: 'pod-1',
      OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${receiver.port}`,
      OTEL_BSP_SCHEDULE_DELAY: '50',
      // OTel metrics beside Prometheus, to the same collector: pushed at least once, at shutdown.
      OTEL_METRICS_EXPORTER: 'otlp',
    });
    const rls = rlsWithMetadata(svc.sluice.grpc);
    let stopped = false;
    try {
      assert.equal(await rls.ask({ traceparent: `00-${id(1)}-${PARENT}-00` }), 'OK'); // caller: not sampled
      assert.equal(await rls.ask({ traceparent: `00-${TRACE}-${PARENT}-01` }), 'OK');
      const span = await receiver.find((s) => s.traceId === TRACE);
      assert.equal(span.parentSpanId, PARENT);
      assert.match(span.spanId, /^[0-9a-f]{16}$/);
      assert.equal(span.name, 'envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit');
      assert.equal(span.kind, 2);
      assert.deepEqual(
        {
          system: span.attributes['rpc.system'],
          method: span.attributes['rpc.method'],
          // int64 in OTLP's JSON: a number or a decimal string, both are the mapping's.
          code: String(span.attributes['rpc.grpc.status_code']),
          domain: span.attributes['ratelimit.domain'],
          overall: span.attributes['ratelimit.overall_code'],
        },
        { system: 'grpc', method: 'ShouldRateLimit', code: '0', domain: 'api', overall: 'OK' },
      );
      assert.equal(receiver.spans.filter((s) => s.traceId === id(1)).length, 0);
      assert.deepEqual(
        {
          name: receiver.resources[0]?.['service.name'],
          namespace: receiver.resources[0]?.['service.namespace'],
          instance: receiver.resources[0]?.['service.instance.id'],
        },
        { name: 'ratelimit-test', namespace: 'edge', instance: 'pod-1' },
      );

      // B3 (single header) and a new trace (no header, sampling rate 1 by default).
      assert.equal(await rls.ask({ b3: `${id(2)}-${PARENT}-1` }), 'OK');
      assert.equal((await receiver.find((s) => s.traceId === id(2))).parentSpanId, PARENT);
      assert.equal(await rls.ask({}), 'OK');
      const root = await receiver.find((s) => s.parentSpanId === undefined || s.parentSpanId === '');
      assert.match(root.traceId, /^[0-9a-f]{32}$/);

      // POST /json is traced as well, from its HTTP headers.
      const res = await postJson(`http://127.0.0.1:${svc.sluice.http}/json`, REQUEST, {
        traceparent: `00-${id(3)}-${PARENT}-01`,
      });
      assert.equal(res.status, 200);
      assert.equal((await receiver.find((s) => s.traceId === id(3))).name, 'POST /json');
      rls.close();
      stopped = true;
      assert.equal(await svc.stop(), 0);
      assert.ok(receiver.metricNames.has('sluice.decisions'), [...receiver.metricNames].join());
    } finally {
      if (!stopped) {
        rls.close();
        assert.equal(await svc.stop(), 0);
      }
      receiver.close();
      runtime.dispose();
    }
  });
});

describe('envoy tracing settings: OTLP/gRPC and the sampling rate', () => {
  it('TRACING_EXPORTER_PROTOCOL=grpc, TRACING_SAMPLING_RATE=0: new traces are not recorded, sampled callers are', async () => {
    const receiver = await grpcReceiver();
    const runtime = createRuntime(RULES);
    const svc = await startEnvoy({
      ...runtime.env,
      TRACING_ENABLED: 'true',
      TRACING_EXPORTER_PROTOCOL: 'grpc',
      TRACING_SAMPLING_RATE: '0',
      OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${receiver.port}`,
      OTEL_BSP_SCHEDULE_DELAY: '50',
    });
    const rls = rlsWithMetadata(svc.sluice.grpc);
    try {
      assert.equal(await rls.ask({}), 'OK'); // a new trace at rate 0: not recorded
      assert.equal(await rls.ask({ traceparent: `00-${TRACE}-${PARENT}-01` }), 'OK');
      const span = await receiver.find((s) => s.traceId === TRACE);
      assert.equal(span.parentSpanId, PARENT);
      assert.equal(span.name, 'envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit');
      assert.equal(receiver.spans.length, 1);
      assert.equal(receiver.resources[0]?.['service.name'], 'RateLimit');
    } finally {
      rls.close();
      assert.equal(await svc.stop(), 0);
      receiver.close();
      runtime.dispose();
    }
  });
});
