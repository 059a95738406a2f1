/**
 * The gRPC server at the wire, with a raw HTTP/2 client: malformed and unusual requests get gRPC errors
 * (or HTTP ones before gRPC applies), compressed messages are read, and the service keeps serving.
 */
import assert from 'node:assert/strict';
import { type ClientHttp2Session, connect, type IncomingHttpHeaders } from 'node:http2';
import { after, before, describe, it } from 'node:test';
import { gzipSync } from 'node:zlib';
import { encodeRateLimitRequestFrame } from '../../src/rls/wire.js';
import { type SluiceProcess, startSluice } from './helpers.js';

const PATH = '/envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit';

interface Answer {
  status: number;
  grpcStatus: string | undefined;
  grpcMessage: string | undefined;
  body: Buffer;
}

function frame(message: Buffer, compressed = false): Buffer {
  const header = Buffer.alloc(5);
  header[0] = compressed ? 1 : 0;
  header.writeUInt32BE(message.length, 1);
  return Buffer.concat([header, message]);
}

describe('gRPC wire handling of ShouldRateLimit', () => {
  let sluice: SluiceProcess;
  let session: ClientHttp2Session;
  const call = (body: Buffer, headers: Record<string, string> = {}, path = PATH) =>
    new Promise<Answer>((resolve, reject) => {
      const stream = session.request({
        ':method': 'POST',
        ':path': path,
        'content-type': 'application/grpc',
        te: 'trailers',
        ...headers,
      });
      let response: IncomingHttpHeaders = {};
      let trailers: IncomingHttpHeaders = {};
      const chunks: Buffer[] = [];
      stream.on('response', (h) => {
        response = h;
      });
      stream.on('trailers', (t) => {
        trailers = t;
      });
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('error', reject);
      stream.on('close', () =>
        resolve({
          status: Number(response[':status']),
          grpcStatus: (trailers['grpc-status'] ?? response['grpc-status']) as string | undefined,
          grpcMessage: (trailers['grpc-message'] ?? response['grpc-message']) as string | undefined,
          body: Buffer.concat(chunks),
        }),
      );
      stream.end(body);
    });
  const valid = () =>
    encodeRateLimitRequestFrame({ domain: 'example', descriptors: [{ entries: [{ key: 'api_key', value: 'wire' }] }] });

  before(async () => {
    sluice = await startSluice([]);
    session = connect(`http://127.0.0.1:${sluice.grpc}`);
  });
  after(async () => {
    session?.close();
    assert.equal((await sluice?.stop())?.code, 0);
  });

  it('answers a valid call with status 0 and one message', async () => {
    const res = await call(valid());
    assert.equal(res.status, 200);
    assert.equal(res.grpcStatus, '0');
    assert.equal(res.body[0], 0);
    assert.equal(res.body.readUInt32BE(1), res.body.length - 5);
  });

  it('reads gzip-compressed messages', async () => {
    const res = await call(frame(gzipSync(valid().subarray(5)), true), { 'grpc-encoding': 'gzip' });
    assert.equal(res.grpcStatus, '0');
  });

  it('refuses what it cannot read, with a gRPC status and a message', async () => {
    const cases: [Buffer, Record<string, string>, string, string][] = [
      // grpc-js's words, which the lean path answers in (grpc-server.test.ts holds them call by call).
      [frame(Buffer.from([0x0a, 0x50, 0x61])), {}, '13', 'Error deserializing request'], // domain runs past the message
      [frame(Buffer.from([0x0b])), {}, '13', 'Error deserializing request'],
      [Buffer.from([0, 0, 0]), {}, '12', 'Received no request message'],
      [Buffer.concat([valid(), valid()]), {}, '12', 'Received a second request message'],
      [frame(Buffer.from('not gzip'), true), { 'grpc-encoding': 'gzip' }, '13', 'Failed to decompress'],
      [frame(Buffer.from('x'), true), { 'grpc-encoding': 'snappy' }, '12', 'snappy'],
      [encodeRateLimitRequestFrame({ domain: '', descriptors: [] }), {}, '3', 'domain must not be empty'],
      [
        encodeRateLimitRequestFrame({ domain: 'example', descriptors: [] }),
        {},
        '3',
        'descriptor list must not be empty',
      ],
    ];
    for (const [body, headers, code, message] of cases) {
      const res = await call(body, headers);
      assert.equal(res.status, 200);
      assert.equal(res.grpcStatus, code, `${message}: ${res.grpcMessage}`);
      assert.match(decodeURIComponent(res.grpcMessage ?? ''), new RegExp(message));
    }
    const unknown = await call(valid(), {}, '/envoy.service.ratelimit.v3.RateLimitService/Nope');
    assert.equal(unknown.grpcStatus, '12');
    const big = await call(frame(Buffer.alloc(5 * 1024 * 1024)));
    assert.equal(big.grpcStatus, '8');
  });

  it('answers HTTP errors to requests that are not gRPC, and keeps serving', async () => {
    const notGrpc = await call(valid(), { 'content-type': 'application/json' });
    assert.equal(notGrpc.status, 415);
    const get = await new Promise<number>((resolve) => {
      const stream = session.request({ ':method': 'GET', ':path': PATH });
      stream.on('response', (h) => resolve(Number(h[':status'])));
      stream.end();
    });
    // grpc-js refuses a GET by its missing content type, before the method.
    assert.equal(get, 415);
    assert.equal((await call(valid())).grpcStatus, '0');
  });
});
