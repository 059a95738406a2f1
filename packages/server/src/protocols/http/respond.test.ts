import assert from 'node:assert/strict';
import { createServer, get, type IncomingMessage, type OutgoingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, it } from 'node:test';
import { sendJson } from './respond.js';

/** One request to a server that answers with `sendJson(res, status, body, headers)`: the raw head and the body. */
async function answer(status: number, body: unknown, headers?: OutgoingHttpHeaders) {
  server = createServer((_req, res) => sendJson(res, status, body, headers));
  await new Promise<void>((resolve) => server?.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const res = await new Promise<IncomingMessage>((resolve, reject) =>
    get({ host: '127.0.0.1', port, path: '/' }, resolve).on('error', reject),
  );
  let text = '';
  for await (const chunk of res) text += chunk;
  return { res, text };
}

let server: Server | undefined;

describe('sendJson', () => {
  afterEach(async () => {
    server?.closeAllConnections();
    await new Promise((resolve) => server?.close(resolve));
  });

  it("writes the body as JSON with the caller's headers, repeated ones included, and its own", async () => {
    const { res, text } = await answer(
      429,
      { error: { code: 'X' } },
      {
        'retry-after': '3',
        'x-ratelimit-remaining': 0,
        'set-cookie': ['a=1', 'b=2'],
        'x-skipped': undefined,
      },
    );
    assert.equal(res.statusCode, 429);
    assert.deepEqual(JSON.parse(text), { error: { code: 'X' } });
    assert.equal(res.headers['retry-after'], '3');
    assert.equal(res.headers['x-ratelimit-remaining'], '0');
    assert.deepEqual(res.headers['set-cookie'], ['a=1', 'b=2']);
    assert.equal('x-skipped' in res.headers, false);
    assert.equal(res.headers['content-type'], 'application/json; charset=utf-8');
    assert.equal(res.headers['content-length'], String(Buffer.byteLength(text)));
    assert.equal(res.headers['cache-control'], 'no-store');
  });

  it('keeps its own content type, length and cache control when the caller names them too', async () => {
    const { res, text } = await answer(
      200,
      { ok: 'é' },
      {
        'content-type': 'text/plain',
        'content-length': 1,
        'cache-control': 'public',
      },
    );
    const raw = res.rawHeaders.filter((_, i) => i % 2 === 0).map((n) => n.toLowerCase());
    assert.equal(raw.filter((n) => n === 'content-type').length, 1);
    assert.equal(raw.filter((n) => n === 'content-length').length, 1);
    assert.equal(res.headers['content-type'], 'application/json; charset=utf-8');
    assert.equal(res.headers['cache-control'], 'no-store');
    assert.deepEqual(JSON.parse(text), { ok: 'é' });
  });
});
