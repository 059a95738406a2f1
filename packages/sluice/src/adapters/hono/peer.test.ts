import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Hono } from 'hono';
import { isSluiceError } from '../../core/errors.js';
import { rateLimit } from '../hono.js';
import { createPeerReader, detectRuntime, withoutPort } from './peer.js';

describe('hono peer address', () => {
  it('tells the runtimes apart (Bun and Deno also look like Node)', () => {
    const node = { process: { versions: { node: '20' } } };
    assert.equal(detectRuntime(node), 'node');
    assert.equal(detectRuntime({ ...node, Bun: {} }), 'bun');
    assert.equal(detectRuntime({ ...node, Deno: {} }), 'deno');
    assert.equal(detectRuntime({ navigator: { userAgent: 'Cloudflare-Workers' } }), 'workerd');
    assert.equal(detectRuntime({}), 'unknown');
    assert.equal(detectRuntime(), 'node');
  });

  it("strips the port from workerd's clientIp", () => {
    assert.equal(withoutPort('127.0.0.5:48636'), '127.0.0.5');
    assert.equal(withoutPort('[::1]:8080'), '::1');
    assert.equal(withoutPort('2001:db8::1'), '2001:db8::1');
    assert.equal(withoutPort('10.0.0.1'), '10.0.0.1');
  });

  it('refuses to start on a runtime it cannot read, unless peerAddress or a key replaces the address', () => {
    assert.throws(
      () => createPeerReader({ limit: 1, period: 1000 }, 'unknown'),
      (e) => isSluiceError(e, 'ERR_SLUICE_NO_PEER_ADDRESS') && /peerAddress/.test(e.message),
    );
    createPeerReader({ limit: 1, period: 1000, key: () => 'k' }, 'unknown');
    createPeerReader({ limit: 1, period: 1000, peerAddress: () => '1.2.3.4' }, 'unknown');
    createPeerReader({ limits: [{ limit: 1, period: 1000, key: () => 'k' }] }, 'unknown');
  });

  it('refuses a request whose runtime hid the connection, saying how to serve the app', async () => {
    const app = new Hono();
    app.use(rateLimit({ limit: 5, period: '1m' }));
    app.get('/', (c) => c.text('ok'));
    let error: unknown;
    app.onError((e, c) => {
      error = e;
      return c.text('refused', 500);
    });
    // app.request() hands Hono no Node request: on Node that means no @hono/node-server.
    assert.equal((await app.request('/')).status, 500);
    assert.ok(isSluiceError(error, 'ERR_SLUICE_NO_PEER_ADDRESS'));
    assert.match((error as Error).message, /@hono\/node-server/);
    // With a key instead, the same app works.
    const keyed = new Hono();
    keyed.use(rateLimit({ limit: 5, period: '1m', key: (c) => c.req.header('x-api-key') ?? 'anonymous' }));
    keyed.get('/', (c) => c.text('ok'));
    assert.equal((await keyed.request('/')).status, 200);
  });
});
