/**
 * The warning about a forwarding header from a peer nobody trusts, when the proxy's requests come only
 * after many direct ones (a health checker first, say): the header is looked for on every one of the
 * first requests and then on one in 64, so the warning still comes, once. A file of its own: warnings
 * are given once per process.
 */
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { createIdentity } from './identity.js';
import type { RequestAccess } from './request.js';

interface Req {
  peer: string;
  headers: Record<string, string>;
}

const access: RequestAccess<Req> = {
  peer: (req) => req.peer,
  header: (req, name) => req.headers[name],
  method: () => 'GET',
  url: () => '/',
  headers: (req) => req.headers,
};

it('warns about a proxy nobody trusts within 64 of its requests, after thousands of direct ones', async () => {
  const warnings: string[] = [];
  const onWarning = (w: Error & { code?: string }) => {
    if (w.code === 'SLUICE_UNTRUSTED_FORWARDED_HEADER') warnings.push(w.message);
  };
  process.on('warning', onWarning);
  try {
    const identity = createIdentity({}, access, access.peer);
    const direct: Req = { peer: '203.0.113.7', headers: {} };
    for (let i = 0; i < 5000; i++) assert.equal(identity.clientIp(direct), '203.0.113.7');
    await new Promise((resolve) => setImmediate(resolve));
    assert.deepEqual(warnings, [], 'no forwarding header, nothing to warn about');

    const proxied: Req = { peer: '10.0.0.2', headers: { 'x-forwarded-for': '198.51.100.1' } };
    let sent = 0;
    while (warnings.length === 0 && sent < 64) {
      assert.equal(identity.clientIp(proxied), '10.0.0.2', 'an untrusted header never changes the key');
      sent++;
      await new Promise((resolve) => setImmediate(resolve));
    }
    assert.equal(warnings.length, 1, `warned within 64 proxied requests (after ${sent})`);
    assert.match(warnings.join('\n'), /trustProxy: \['10\.0\.0\.2'\]/);

    for (let i = 0; i < 1000; i++) identity.clientIp(proxied);
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(warnings.length, 1, 'once per process');
  } finally {
    process.off('warning', onWarning);
  }
});
