/**
 * The default gRPC server answers ShouldRateLimit on the lean path (rls-call.ts) and every other method
 * through @grpc/grpc-js, over the same connections. A client must not be able to tell: every answer —
 * status, headers, trailers, body, the gRPC metrics — is compared with grpc-js answering the same call.
 */
import assert from 'node:assert/strict';
import { type ClientHttp2Session, connect, constants, type IncomingHttpHeaders } from 'node:http2';
import { after, before, describe, it } from 'node:test';
import { deflateSync, gzipSync } from 'node:zlib';
import { Metadata, Server } from '@grpc/grpc-js';
import { SluiceError } from 'sluice';
import type { RateLimitRequest } from 'sluice/rules';
import type { Decided, Decider } from '../../core/decide.js';
import { createLogger } from '../../observability/logger.js';
import { createDisabledMetrics } from '../../observability/metrics.js';
import type { Carrier } from '../../observability/tracing/trace-context.js';
import { encodeRateLimitRequestFrame } from '../../rls/wire.js';
import { GRPC_JS_VERSION, type GrpcHandle, LEAN_PATH_GRPC_JS, startGrpcServer } from './grpc-server.js';
import { encodeHealthResponseFrame, HEALTH_CHECK_PATH } from './health-service.js';
import { SHOULD_RATE_LIMIT_PATH } from './rls-call.js';

const DECIDED: Decided = {
  overallCode: 'OK',
  statuses: [{ code: 'OK', limitRemaining: 9, durationUntilResetMs: 1000 }],
  headers: { 'x-ratelimit-limit': '10' },
};

/**
 * A server with a decider that answers by domain, and the carriers and gRPC metrics it saw. `atOnce`: the
 * decider also has `decideNow`, which answers (or throws) synchronously, as the service's own does on the
 * memory store; without it every answer comes through a promise.
 */
async function server(rateLimitOnGrpcJs: boolean, atOnce = false, messageTimeoutMs?: number) {
  const carriers: (Carrier | undefined)[] = [];
  const codes: string[] = [];
  const decideNow = (request: RateLimitRequest, _source: unknown, carrier?: Carrier): Decided | Promise<Decided> => {
    carriers.push(carrier);
    if (request.domain === 'store') throw new SluiceError('ERR_SLUICE_STORE_UNAVAILABLE', 'the store is down');
    if (request.domain === 'broken') throw new Error('a bug');
    // Never answers: the call's grpc-timeout does.
    if (request.domain === 'slow') return new Promise(() => {});
    return DECIDED;
  };
  const decider: Decider = {
    decide(request: RateLimitRequest, source, carrier) {
      try {
        return Promise.resolve(decideNow(request, source, carrier));
      } catch (error) {
        return Promise.reject(error);
      }
    },
    ...(atOnce ? { decideNow } : {}),
  };
  const handle: GrpcHandle = await startGrpcServer({
    host: '127.0.0.1',
    port: 0,
    decider,
    metrics: { ...createDisabledMetrics(), grpc: (code) => codes.push(code) },
    logger: createLogger('silent'),
    health: async (service) => (service === '' ? 'SERVING' : undefined),
    limits: { maxMessageBytes: 64 * 1024, ...(messageTimeoutMs === undefined ? {} : { messageTimeoutMs }) },
    rateLimitOnGrpcJs,
  });
  return { handle, carriers, codes };
}

interface Answer {
  headers: IncomingHttpHeaders;
  trailers: IncomingHttpHeaders;
  body: string;
}

function call(session: ClientHttp2Session, body: Buffer, headers: Record<string, string> = {}): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const stream = session.request(
      {
        ':method': 'POST',
        ':path': SHOULD_RATE_LIMIT_PATH,
        'content-type': 'application/grpc',
        te: 'trailers',
        ...headers,
      },
      // A GET with a body too: the client must not end it at its headers.
      { endStream: false },
    );
    let answer: IncomingHttpHeaders = {};
    let trailers: IncomingHttpHeaders = {};
    const chunks: Buffer[] = [];
    stream.on('response', (h) => {
      answer = h;
    });
    stream.on('trailers', (t) => {
      trailers = t;
    });
    stream.on('data', (c: Buffer) => chunks.push(c));
    stream.on('error', reject);
    stream.on('close', () => {
      const { date: _, ...rest } = answer;
      resolve({ headers: rest, trailers, body: Buffer.concat(chunks).toString('hex') });
    });
    stream.end(body);
  });
}

function frame(message: Buffer, flag = 0): Buffer {
  const header = Buffer.alloc(5);
  header[0] = flag;
  header.writeUInt32BE(message.length, 1);
  return Buffer.concat([header, message]);
}

const valid = (domain = 'example') =>
  encodeRateLimitRequestFrame({ domain, descriptors: [{ entries: [{ key: 'k', value: 'v' }] }] });

/** Calls whose answers must not differ, by name: body and extra headers. */
const CASES: [string, Buffer, Record<string, string>][] = [
  ['a valid call', valid(), {}],
  ['gzip', frame(gzipSync(valid().subarray(5)), 1), { 'grpc-encoding': 'gzip' }],
  ['deflate', frame(deflateSync(valid().subarray(5)), 1), { 'grpc-encoding': 'deflate' }],
  ['a compressed flag without grpc-encoding', frame(valid().subarray(5), 1), {}],
  ['a flag of 2', frame(valid().subarray(5), 2), { 'grpc-encoding': 'gzip' }],
  ['identity encoding named', valid(), { 'grpc-encoding': 'identity' }],
  ['a message that runs past its end', frame(Buffer.from([0x0a, 0x50, 0x61])), {}],
  ['a bad wire type', frame(Buffer.from([0x0b])), {}],
  ['no message', Buffer.alloc(0), {}],
  ['a short prefix', Buffer.from([0, 0, 0]), {}],
  ['a cut message', valid().subarray(0, 8), {}],
  ['two messages', Buffer.concat([valid(), valid()]), {}],
  ['a message and part of another', Buffer.concat([valid(), valid().subarray(0, 7)]), {}],
  ['not gzip', frame(Buffer.from('not gzip'), 1), { 'grpc-encoding': 'gzip' }],
  ['an unknown encoding', frame(Buffer.from('x'), 1), { 'grpc-encoding': 'snappy' }],
  ['a gzip bomb', frame(gzipSync(Buffer.alloc(200 * 1024)), 1), { 'grpc-encoding': 'gzip' }],
  ['an oversized declared length', frame(Buffer.alloc(10)).fill(0xff, 1, 3), {}],
  ['an empty domain', encodeRateLimitRequestFrame({ domain: '', descriptors: [] }), {}],
  ['no descriptors', encodeRateLimitRequestFrame({ domain: 'example', descriptors: [] }), {}],
  ['a store failure', valid('store'), {}],
  ['a bug in the decider', valid('broken'), {}],
  ['a deadline that passes', valid('slow'), { 'grpc-timeout': '20m' }],
  ['a deadline in time', valid(), { 'grpc-timeout': '5S' }],
  ['a malformed grpc-timeout', valid(), { 'grpc-timeout': 'soon' }],
  ['content-type application/grpc+proto', valid(), { 'content-type': 'application/grpc+proto' }],
  [
    'custom metadata',
    valid(),
    { 'x-custom': 'yes', traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01' },
  ],
];

describe('the default gRPC server: ShouldRateLimit on the lean path, the rest on grpc-js', () => {
  let hybrid: Awaited<ReturnType<typeof server>>;
  let atOnce: Awaited<ReturnType<typeof server>>;
  let grpcJs: Awaited<ReturnType<typeof server>>;
  let toHybrid: ClientHttp2Session;
  let toAtOnce: ClientHttp2Session;
  let toGrpcJs: ClientHttp2Session;
  before(async () => {
    [hybrid, atOnce, grpcJs] = await Promise.all([server(false), server(false, true), server(true)]);
    toHybrid = connect(`http://127.0.0.1:${hybrid.handle.port}`);
    toAtOnce = connect(`http://127.0.0.1:${atOnce.handle.port}`);
    toGrpcJs = connect(`http://127.0.0.1:${grpcJs.handle.port}`);
  });
  after(async () => {
    toHybrid?.close();
    toAtOnce?.close();
    toGrpcJs?.close();
    await Promise.all([hybrid?.handle.close(1000), atOnce?.handle.close(1000), grpcJs?.handle.close(1000)]);
  });

  for (const [name, body, headers] of CASES) {
    it(`answers ${name} as grpc-js does, and counts it alike (decisions by promise and at once)`, async () => {
      hybrid.codes.length = 0;
      atOnce.codes.length = 0;
      grpcJs.codes.length = 0;
      const [mine, now, theirs] = await Promise.all([
        call(toHybrid, body, headers),
        call(toAtOnce, body, headers),
        call(toGrpcJs, body, headers),
      ]);
      assert.deepEqual(mine, theirs);
      assert.deepEqual(now, theirs);
      assert.deepEqual(hybrid.codes, grpcJs.codes);
      assert.deepEqual(atOnce.codes, grpcJs.codes);
    });
  }

  it('knows the installed @grpc/grpc-js: the lean path relies on its private Server#createHttp2Server', () => {
    // When this fails, grpc-js was upgraded past what the lean path was checked against: read grpc-js's
    // server.ts (createHttp2Server, the 'stream' listener it adds), re-run this file, then widen the range.
    assert.match(GRPC_JS_VERSION, LEAN_PATH_GRPC_JS, `@grpc/grpc-js ${GRPC_JS_VERSION} is not one the lean path knows`);
    const proto = Server.prototype as unknown as Record<string, unknown>;
    assert.equal(typeof proto.createHttp2Server, 'function', 'grpc-js has no Server#createHttp2Server any more');
  });

  it('decides on the lean path (the headers as they came), grpc-js on its own (its Metadata)', async () => {
    hybrid.carriers.length = 0;
    grpcJs.carriers.length = 0;
    await call(toHybrid, valid(), { traceparent: 'x' });
    await call(toGrpcJs, valid(), { traceparent: 'x' });
    assert.equal(hybrid.carriers.length, 1);
    assert.ok(!(hybrid.carriers[0] instanceof Metadata));
    assert.equal((hybrid.carriers[0] as IncomingHttpHeaders).traceparent, 'x');
    assert.ok(grpcJs.carriers[0] instanceof Metadata);
  });

  it('answers health Check (grpc-js) and ShouldRateLimit (lean) over one connection, interleaved', async () => {
    const health = (service: string) =>
      call(
        toHybrid,
        frame(
          service === '' ? Buffer.alloc(0) : Buffer.concat([Buffer.from([0x0a, service.length]), Buffer.from(service)]),
        ),
        {
          ':path': HEALTH_CHECK_PATH,
        },
      );
    hybrid.carriers.length = 0;
    const [serving, rls, unknown, rls2] = await Promise.all([
      health(''),
      call(toHybrid, valid()),
      health('nope'),
      call(toHybrid, valid()),
    ]);
    assert.equal(serving.trailers['grpc-status'], '0');
    assert.equal(serving.body, encodeHealthResponseFrame('SERVING').toString('hex'));
    assert.equal(unknown.headers['grpc-status'], '5');
    assert.equal(rls.trailers['grpc-status'], '0');
    assert.deepEqual(rls, rls2);
    assert.equal(hybrid.carriers.length, 2);
    assert.ok(hybrid.carriers.every((c) => !(c instanceof Metadata)));
  });

  it('leaves what is not a gRPC POST of ShouldRateLimit to grpc-js: other methods, GET, other content types', async () => {
    const others: Record<string, string>[] = [
      { ':path': '/envoy.service.ratelimit.v3.RateLimitService/Nope' },
      { ':method': 'GET' },
      { 'content-type': 'application/json' },
    ];
    for (const headers of others) {
      const [mine, theirs] = await Promise.all([call(toHybrid, valid(), headers), call(toGrpcJs, valid(), headers)]);
      assert.deepEqual(mine, theirs, JSON.stringify(headers));
    }
  });
});

describe('shutdown: the grace bounds it, whatever calls are open', () => {
  /** Opens a call whose message never completes (a prefix that declares 100 bytes, then 2 of them). */
  function halfSent(session: ClientHttp2Session) {
    const stream = session.request(
      { ':method': 'POST', ':path': SHOULD_RATE_LIMIT_PATH, 'content-type': 'application/grpc', te: 'trailers' },
      { endStream: false },
    );
    stream.on('error', () => {});
    stream.write(Buffer.from([0, 0, 0, 0, 100, 0x0a, 0x02]));
    return new Promise<number>((resolve) => stream.on('close', () => resolve(stream.rstCode ?? -1)));
  }

  for (const [path, onGrpcJs] of [
    ['the lean path', false],
    ['grpc-js', true],
  ] as const) {
    it(
      `cancels a call still receiving its message (${path}) when the grace is over, not at the message timeout`,
      {
        timeout: 20_000,
      },
      async () => {
        // The message timeout (an hour) cannot end the call while the test runs: only the shutdown can.
        const { handle } = await server(onGrpcJs, false, 3_600_000);
        const session = connect(`http://127.0.0.1:${handle.port}`);
        session.on('error', () => {});
        const halfSentClosed = halfSent(session);
        // A later call on the same connection answered: the server has the half-sent call's headers.
        const health = await call(session, frame(Buffer.alloc(0)), { ':path': HEALTH_CHECK_PATH });
        assert.equal(health.trailers['grpc-status'], '0');
        await handle.close(20);
        assert.equal(await halfSentClosed, constants.NGHTTP2_CANCEL);
        session.destroy();
      },
    );
  }
});
