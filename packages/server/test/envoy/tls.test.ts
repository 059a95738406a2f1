/**
 * gRPC over TLS and mutual TLS as envoy ratelimit sets them up (GRPC_SERVER_USE_TLS, GRPC_SERVER_TLS_CERT,
 * GRPC_SERVER_TLS_KEY, GRPC_CLIENT_TLS_CACERT, GRPC_CLIENT_TLS_SAN), reproducing its Test_mTLS and
 * TestReloadGRPCServerCerts: certificates made by openssl for this run, a real TLS client, and the
 * certificate files replaced under the running service, on both gRPC servers.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { credentials, type ServiceError } from '@grpc/grpc-js';
import { createRlsClient } from '../../src/index.js';
import type { SluiceProcess } from '../integration/helpers.js';
import { createRuntime, FIXTURES, type Runtime, startEnvoy } from './harness.js';
import { createPki } from './pki.js';

/** Asks once over a new TLS channel; resolves with the overall code or rejects with the gRPC error. */
async function askOver(port: number, ca: string, client?: { cert: string; key: string }): Promise<string | undefined> {
  const creds = credentials.createSsl(
    readFileSync(ca),
    client === undefined ? null : readFileSync(client.key),
    client === undefined ? null : readFileSync(client.cert),
  );
  const rls = createRlsClient(`localhost:${port}`, {}, creds);
  try {
    const res = await rls.shouldRateLimit(
      { domain: 'basic', descriptors: [{ entries: [{ key: 'key1', value: 'tls' }] }] },
      5000,
    );
    return res.overallCode;
  } finally {
    rls.close();
  }
}

describe(`gRPC TLS, certificate reload and mutual TLS`, () => {
  let dir: string;
  let runtime: Runtime;
  let pki: ReturnType<typeof createPki>;
  const started: SluiceProcess[] = [];
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'sluice-tls-'));
    pki = createPki(dir);
    runtime = createRuntime({}, [join(FIXTURES, 'runtime')]);
  });
  after(async () => {
    for (const s of started) await s.stop();
    runtime?.dispose();
    rmSync(dir, { recursive: true, force: true });
  });

  it('TLS: a client trusting the CA is served; after the files are replaced, the new certificate is used', async () => {
    const caA = pki.ca('ca-a');
    const caB = pki.ca('ca-b');
    const a = pki.leaf('server-a', 'ca-a', 'DNS:localhost,IP:127.0.0.1');
    const b = pki.leaf('server-b', 'ca-b', 'DNS:localhost,IP:127.0.0.1');
    const svc = await startEnvoy({
      ...runtime.env,
      GRPC_SERVER_USE_TLS: 'true',
      GRPC_SERVER_TLS_CERT: a.cert,
      GRPC_SERVER_TLS_KEY: a.key,
    });
    started.push(svc.sluice);
    svc.client.close();
    assert.equal(await askOver(svc.sluice.grpc, caA), 'OK');
    await assert.rejects(askOver(svc.sluice.grpc, caB));
    // Replace the files the way envoy's test does (rename over), then wait for the reload's log line.
    renameSync(b.cert, a.cert);
    renameSync(b.key, a.key);
    await svc.sluice.waitForLog((r) => r.msg === 'gRPC TLS certificates reloaded');
    assert.equal(await askOver(svc.sluice.grpc, caB), 'OK');
    await assert.rejects(askOver(svc.sluice.grpc, caA));
    assert.equal((await svc.sluice.stop()).code, 0);
  });

  it('mutual TLS: a client certificate from the CA naming the SAN is served; others are not', async () => {
    const serverCa = pki.ca('srv-ca');
    const clientCa = pki.ca('cli-ca');
    const server = pki.leaf('srv', 'srv-ca', 'DNS:localhost,IP:127.0.0.1');
    const good = pki.leaf('client-good', 'cli-ca', 'DNS:envoy.client');
    const wrongName = pki.leaf('client-wrong', 'cli-ca', 'DNS:someone.else');
    const otherCa = pki.ca('other-ca');
    const foreign = pki.leaf('client-foreign', 'other-ca', 'DNS:envoy.client');
    void otherCa;
    const svc = await startEnvoy({
      ...runtime.env,
      GRPC_SERVER_USE_TLS: 'true',
      GRPC_SERVER_TLS_CERT: server.cert,
      GRPC_SERVER_TLS_KEY: server.key,
      GRPC_CLIENT_TLS_CACERT: clientCa,
      GRPC_CLIENT_TLS_SAN: 'envoy.client',
    });
    started.push(svc.sluice);
    svc.client.close();
    assert.equal(await askOver(svc.sluice.grpc, serverCa, good), 'OK');
    await assert.rejects(askOver(svc.sluice.grpc, serverCa), 'no client certificate');
    await assert.rejects(askOver(svc.sluice.grpc, serverCa, foreign), 'a certificate from another CA');
    await assert.rejects(askOver(svc.sluice.grpc, serverCa, wrongName), (e: ServiceError) => {
      // grpc-js checks the name per call (UNAUTHENTICATED); the h2 server refuses the connection.
      assert.ok(e.code === 16 || e.code === 14, `code ${e.code}`);
      return true;
    });
    // Health Check and Watch to the wrong name: test/abuse/grpc-health-abuse.test.ts.
    assert.equal((await svc.sluice.stop()).code, 0);
  });

  it('a key that does not match its certificate stops the start, naming the files', async () => {
    const a = pki.leaf('mismatch-a', 'ca-a', 'DNS:localhost');
    const b = pki.leaf('mismatch-b', 'ca-a', 'DNS:localhost');
    await assert.rejects(
      startEnvoy({
        ...runtime.env,
        GRPC_SERVER_USE_TLS: 'true',
        GRPC_SERVER_TLS_CERT: a.cert,
        GRPC_SERVER_TLS_KEY: b.key,
      }),
      /ERR_SLUICE_TLS_INVALID|cannot use/,
    );
  });

  // An expired certificate at start: test/abuse/grpc-health-abuse.test.ts.
  it('a reload to an expired server certificate keeps the last good one', async () => {
    const expired = pki.dated('expired', 'DNS:localhost,IP:127.0.0.1', '20200101000000Z', '20200201000000Z');
    const ca = pki.ca('ca-live');
    const live = pki.leaf('server-live', 'ca-live', 'DNS:localhost,IP:127.0.0.1');
    const svc = await startEnvoy({
      ...runtime.env,
      GRPC_SERVER_USE_TLS: 'true',
      GRPC_SERVER_TLS_CERT: live.cert,
      GRPC_SERVER_TLS_KEY: live.key,
    });
    started.push(svc.sluice);
    svc.client.close();
    assert.equal(await askOver(svc.sluice.grpc, ca), 'OK');
    renameSync(expired.cert, live.cert);
    renameSync(expired.key, live.key);
    const refused = await svc.sluice.waitForLog(
      (r) => r.msg === 'gRPC TLS files not reloaded; keeping the last good ones',
    );
    assert.equal(refused.code, 'ERR_SLUICE_TLS_INVALID');
    assert.match(String(refused.err), /expired on/);
    assert.equal(await askOver(svc.sluice.grpc, ca), 'OK', 'clients are still served with the last good certificate');
    assert.equal((await svc.sluice.stop()).code, 0);
  });
});
