import assert from 'node:assert/strict';
import type { IncomingHttpHeaders, IncomingMessage } from 'node:http';
import { describe, it } from 'node:test';
import { forwardableRaw, upstreamHeaderList, upstreamHeaders } from './forwarding.js';

/** The parts of a client request the upstream headers are made from. */
function clientRequest(method: string, headers: IncomingHttpHeaders, peer = '10.0.0.7'): IncomingMessage {
  return { method, headers, socket: { remoteAddress: peer } } as unknown as IncomingMessage;
}

/** A flat header list as name → values, for comparisons that do not depend on order. */
function byName(list: readonly string[]): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  for (let i = 0; i + 1 < list.length; i += 2) {
    const name = list[i] as string;
    out[name] = [...(out[name] ?? []), list[i + 1] as string];
  }
  return out;
}

describe('forwardableRaw', () => {
  it('keeps end-to-end header lines as the upstream sent them and appends the rate-limit headers', () => {
    const raw = ['Content-Type', 'text/plain', 'Set-Cookie', 'a=1', 'Set-Cookie', 'b=2', 'ETag', '"x"'];
    assert.deepEqual(forwardableRaw(raw, { 'x-ratelimit-limit': '10' }), [...raw, 'x-ratelimit-limit', '10']);
  });

  it('drops hop-by-hop headers, in any case, and those the Connection header names', () => {
    const raw = [
      'Connection',
      'X-Secret, Keep-Alive',
      'Keep-Alive',
      'timeout=5',
      'TRANSFER-ENCODING',
      'chunked',
      'x-secret',
      'hop',
      'Upgrade',
      'h2c',
      'Proxy-Authenticate',
      'Basic',
      'Trailer',
      'Expires',
      'Te',
      'trailers',
      'Vary',
      'Accept',
    ];
    assert.deepEqual(forwardableRaw(raw, {}), ['Vary', 'Accept']);
  });

  it('drops the names of every Connection field, when the upstream sends several', () => {
    const raw = ['X-A', '1', 'Connection', 'x-a', 'X-B', '2', 'connection', 'X-B , , x-c', 'X-C', '3', 'X-D', '4'];
    assert.deepEqual(forwardableRaw(raw, {}), ['X-D', '4']);
  });

  it("replaces the upstream's own rate-limit headers with the gateway's", () => {
    const raw = ['X-RateLimit-Remaining', '999', 'Retry-After', '60', 'Content-Length', '2'];
    assert.deepEqual(forwardableRaw(raw, { 'x-ratelimit-remaining': '4', 'retry-after': '1' }), [
      'Content-Length',
      '2',
      'x-ratelimit-remaining',
      '4',
      'retry-after',
      '1',
    ]);
  });

  it('does not mistake a header named like an object property for a rate-limit header', () => {
    assert.deepEqual(forwardableRaw(['constructor', 'x'], {}), ['constructor', 'x']);
  });

  it('drops names of any length that Connection lists, and only the rate-limit headers of a given length', () => {
    const long = 'X-A-Header-Name-Longer-Than-Thirty-One';
    const raw = ['Connection', `${long.toLowerCase()}, x-b`, long, '1', 'X-B', '2', 'X-RateLimit-Limit', '9'];
    // X-Custom-Thing-Ab has the length of x-ratelimit-limit but is not it; Retry-After is replaced.
    raw.push('X-Custom-Thing-Ab', '3', 'RETRY-AFTER', '60', 'Date', 'today');
    assert.deepEqual(forwardableRaw(raw, { 'x-ratelimit-limit': '10', 'retry-after': '1' }), [
      'X-Custom-Thing-Ab',
      '3',
      'Date',
      'today',
      'x-ratelimit-limit',
      '10',
      'retry-after',
      '1',
    ]);
  });
});

describe('upstreamHeaderList', () => {
  it("sends the end-to-end headers, the upstream's Host and this hop's forwarding headers", () => {
    const req = clientRequest('GET', {
      host: 'shop.example',
      accept: '*/*',
      connection: 'keep-alive, x-hop',
      'x-hop': 'dropped',
      'keep-alive': 'timeout=5',
      te: 'trailers',
      'x-forwarded-for': '6.6.6.6',
      'x-real-ip': '6.6.6.6',
      forwarded: 'for=6.6.6.6',
      'set-cookie': ['a=1', 'b=2'],
    });
    assert.deepEqual(byName(upstreamHeaderList(req, '10.0.0.7', false, '127.0.0.1:3000')), {
      host: ['127.0.0.1:3000'],
      accept: ['*/*'],
      'set-cookie': ['a=1', 'b=2'],
      'x-forwarded-for': ['10.0.0.7'],
      'x-forwarded-proto': ['http'],
      'x-forwarded-host': ['shop.example'],
      'x-real-ip': ['10.0.0.7'],
      forwarded: ['for=10.0.0.7;host=shop.example;proto=http'],
    });
  });

  it("extends a trusted proxy's forwarding headers", () => {
    const req = clientRequest('GET', {
      host: 'shop.example',
      'x-forwarded-for': '203.0.113.9',
      'x-forwarded-proto': 'https',
      'x-forwarded-host': 'www.example',
      forwarded: 'for=203.0.113.9',
    });
    const sent = byName(upstreamHeaderList(req, '203.0.113.9', true, 'up:80'));
    assert.deepEqual(sent['x-forwarded-for'], ['203.0.113.9, 10.0.0.7']);
    assert.deepEqual(sent['x-forwarded-proto'], ['https']);
    assert.deepEqual(sent['x-forwarded-host'], ['www.example']);
    assert.deepEqual(sent.forwarded, ['for=203.0.113.9, for=10.0.0.7;host=shop.example;proto=https']);
    assert.deepEqual(sent['x-real-ip'], ['203.0.113.9']);
  });

  it('gives a body-capable request without a length Content-Length: 0, and nothing else a length', () => {
    const length = (method: string, headers: IncomingHttpHeaders) =>
      byName(upstreamHeaderList(clientRequest(method, { host: 'h', ...headers }), '10.0.0.7', false, 'up'))[
        'content-length'
      ];
    assert.deepEqual(length('POST', {}), ['0']);
    assert.deepEqual(length('PUT', {}), ['0']);
    assert.deepEqual(length('POST', { 'content-length': '12' }), ['12']);
    assert.equal(length('POST', { 'transfer-encoding': 'chunked' }), undefined);
    assert.equal(length('GET', {}), undefined);
    assert.equal(length('DELETE', {}), undefined);
  });

  it('as an object for upgrades: a repeated field as a list', () => {
    const req = clientRequest('GET', { host: 'h', 'set-cookie': ['a=1', 'b=2'], upgrade: 'websocket' });
    const headers = upstreamHeaders(req, '10.0.0.7', false, 'up:80');
    assert.deepEqual(headers['set-cookie'], ['a=1', 'b=2']);
    assert.equal(headers.host, 'up:80');
    assert.equal(headers.upgrade, undefined);
  });

  it('never passes on HTTP2-Settings, even when the Connection header does not name it', () => {
    // It only goes with an h2c upgrade (RFC 7540 §3.2.1), which the gateway refuses.
    const req = clientRequest('GET', { host: 'h', upgrade: 'h2c', 'http2-settings': 'AAMAAABkAAQCAAAAAAIAAAAA' });
    assert.equal(byName(upstreamHeaderList(req, '10.0.0.7', false, 'up:80'))['http2-settings'], undefined);
    assert.equal(upstreamHeaders(req, '10.0.0.7', false, 'up:80')['http2-settings'], undefined);
  });
});
