/**
 * The gRPC side of issue 37 (items 7 and 15), against the real `sluice serve` on its default grpc-js server:
 * - Health Watch slots: one client address opening many connections used to take every slot of the
 *   service, so another client's Watch got RESOURCE_EXHAUSTED and its health checking marked the service
 *   down. Loopback has many addresses: the attacker connects from 127.0.0.1, the other client from 127.0.0.2.
 * - A client certificate without GRPC_CLIENT_TLS_SAN was served health Check and Watch (ShouldRateLimit
 *   refused it).
 * - An expired or not-yet-valid server certificate was accepted at start (every client then failed).
 * - An unfinished request message was cut 12.5–15 s after its headers where the bound says 10 s.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { type ClientHttp2Session, connect, type SecureClientSessionOptions } from 'node:http2';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import {
  type ChannelCredentials,
  credentials,
  loadPackageDefinition,
  makeGenericClientConstructor,
  type ServiceError,
} from '@grpc/grpc-js';
import { loadSync } from '@grpc/proto-loader';
import { PROTO_DIR } from '../../src/support/proto.js';
import { createRuntime, FIXTURES, type Runtime } from '../envoy/harness.js';
import { grpcJsWatch, rawWatch } from '../envoy/health-client.js';
import { createPki } from '../envoy/pki.js';
import { CLI, ROOT, type SluiceProcess, startSluice } from '../integration/helpers.js';

const DEADLINE_EXCEEDED = 4;
const RESOURCE_EXHAUSTED = 8;
const UNAUTHENTICATED = 16;

function sessionFrom(port: number, localAddress: string): ClientHttp2Session {
  // http2.connect passes net.connect's options on (its types leave localAddress out).
  const session = connect(`http://127.0.0.1:${port}`, { localAddress } as SecureClientSessionOptions);
  session.on('error', () => {});
  return session;
}

/** Opens `connections` × `perConnection` Watch calls from `address`: how many got a status, how many were refused. */
async function watchFrom(
  sluice: SluiceProcess,
  sessions: ClientHttp2Session[],
  address: string,
  connections: number,
  perConnection: number,
): Promise<{ watching: number; refused: number; other: number }> {
  const outcomes: Promise<'watching' | 'refused' | 'other'>[] = [];
  for (let c = 0; c < connections; c++) {
    const session = sessionFrom(sluice.grpc, address);
    sessions.push(session);
    for (let w = 0; w < perConnection; w++) {
      const watch = rawWatch(session, '');
      // The first status, or the call's end: RESOURCE_EXHAUSTED when a cap refused it.
      outcomes.push(
        watch.nth(1).then(
          () => 'watching' as const,
          async () => ((await watch.ended).code === RESOURCE_EXHAUSTED ? ('refused' as const) : ('other' as const)),
        ),
      );
    }
  }
  const results = await Promise.all(outcomes);
  const count = (r: string) => results.filter((x) => x === r).length;
  return { watching: count('watching'), refused: count('refused'), other: count('other') };
}

describe('health Watch: one address cannot take every slot', () => {
  const sessions: ClientHttp2Session[] = [];
  const started: SluiceProcess[] = [];
  after(async () => {
    for (const s of sessions) s.destroy();
    for (const s of started) await s.stop();
  });

  it('63 connections × 16 watches from one address get at most 64; another address is still served', async () => {
    const sluice = await startSluice([]);
    started.push(sluice);
    const attacker = await watchFrom(sluice, sessions, '127.0.0.1', 63, 16);
    assert.equal(attacker.other, 0);
    assert.ok(attacker.watching >= 16 && attacker.watching <= 64, `one address holds ${attacker.watching} watches`);
    const other = sessionFrom(sluice.grpc, '127.0.0.2');
    sessions.push(other);
    assert.equal(await rawWatch(other, '').nth(1), 'SERVING', 'another client still gets its Watch');
  });

  it('--grpc-max-client-watches sets the per-address bound', async () => {
    const sluice = await startSluice(['--grpc-max-client-watches', '4']);
    started.push(sluice);
    const attacker = await watchFrom(sluice, sessions, '127.0.0.1', 3, 4);
    assert.deepEqual(attacker, { watching: 4, refused: 8, other: 0 });
    const other = sessionFrom(sluice.grpc, '127.0.0.2');
    sessions.push(other);
    assert.equal(await rawWatch(other, '').nth(1), 'SERVING', 'another address has its own 4');
  });
});

/** grpc.health.v1 Check over `creds`: the status, or the gRPC error code. */
async function healthCheck(port: number, creds: ChannelCredentials): Promise<string | number> {
  const definition = loadPackageDefinition(
    loadSync('grpc/health/v1/health.proto', { includeDirs: [PROTO_DIR], enums: String, defaults: true }),
  ) as unknown as { grpc: { health: { v1: { Health: { service: never } } } } };
  const Client = makeGenericClientConstructor(definition.grpc.health.v1.Health.service, 'Health');
  const client = new Client(`localhost:${port}`, creds) as unknown as {
    Check(req: unknown, cb: (e: ServiceError | null, r?: { status: string }) => void): void;
    close(): void;
  };
  try {
    return await new Promise((resolve) =>
      client.Check({ service: '' }, (e, r) => resolve(e === null ? (r?.status ?? '') : e.code)),
    );
  } finally {
    client.close();
  }
}

/** Runs `sluice serve` on free ports with `env` until it exits (it must not start): its exit code and stderr. */
function serveUntilExit(args: string[], env: Record<string, string>): Promise<{ code: number | null; stderr: string }> {
  const child = spawn(
    process.execPath,
    [...CLI, 'serve', '--host', '127.0.0.1', '--port', '0', '--grpc-port', '0', ...args],
    {
      cwd: ROOT,
      env: { ...process.env, ...env },
      stdio: ['ignore', 'ignore', 'pipe'],
    },
  );
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  // A start that wrongly succeeds is stopped, so the assertion on its exit code fails rather than hangs.
  const stop = setTimeout(() => child.kill('SIGTERM'), 30_000);
  return new Promise((resolve) =>
    // 'close', not 'exit': stderr has been read to its end.
    child.once('close', (code) => {
      clearTimeout(stop);
      resolve({ code, stderr });
    }),
  );
}

describe('gRPC TLS: client names and server certificate validity', () => {
  let dir: string;
  let runtime: Runtime;
  let pki: ReturnType<typeof createPki>;
  const started: SluiceProcess[] = [];
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'sluice-grpc-abuse-'));
    pki = createPki(dir);
    runtime = createRuntime({}, [join(FIXTURES, 'runtime')]);
  });
  after(async () => {
    for (const s of started) await s.stop();
    runtime?.dispose();
    rmSync(dir, { recursive: true, force: true });
  });

  it('a client certificate without the SAN is refused health Check and Watch, UNAUTHENTICATED', async () => {
    const serverCa = pki.ca('srv-ca');
    const clientCa = pki.ca('cli-ca');
    const server = pki.leaf('srv', 'srv-ca', 'DNS:localhost,IP:127.0.0.1');
    const good = pki.leaf('client-good', 'cli-ca', 'DNS:envoy.client');
    const wrong = pki.leaf('client-wrong', 'cli-ca', 'DNS:someone.else');
    // Info: envoy mode logs at warn by default, and the harness waits for the 'listening' line.
    const sluice = await startSluice(['--envoy-compat', '--log-level', 'info'], {
      ...runtime.env,
      GRPC_SERVER_USE_TLS: 'true',
      GRPC_SERVER_TLS_CERT: server.cert,
      GRPC_SERVER_TLS_KEY: server.key,
      GRPC_CLIENT_TLS_CACERT: clientCa,
      GRPC_CLIENT_TLS_SAN: 'envoy.client',
    });
    started.push(sluice);
    const as = (c: { cert: string; key: string }) =>
      credentials.createSsl(readFileSync(serverCa), readFileSync(c.key), readFileSync(c.cert));

    assert.equal(await healthCheck(sluice.grpc, as(wrong)), UNAUTHENTICATED, 'Check to the wrong name');
    const watchWrong = grpcJsWatch(`localhost:${sluice.grpc}`, '', as(wrong));
    const ended = await watchWrong.ended;
    watchWrong.close();
    assert.equal(ended.code, UNAUTHENTICATED, 'Watch to the wrong name');
    assert.deepEqual(watchWrong.statuses, [], 'no status reached the wrong name');

    // The right name is served both.
    assert.equal(await healthCheck(sluice.grpc, as(good)), 'SERVING');
    const watchGood = grpcJsWatch(`localhost:${sluice.grpc}`, '', as(good));
    assert.equal(await watchGood.nth(1), 'SERVING');
    watchGood.close();
  });

  for (const [what, start, end] of [
    ['expired', '20200101000000Z', '20200201000000Z'],
    ['not yet valid', '20900101000000Z', '20900201000000Z'],
  ] as const) {
    it(`a server certificate that is ${what} stops the start: exit 1, ERR_SLUICE_TLS_INVALID, what to do`, async () => {
      const name = what.replaceAll(' ', '-');
      const cert = pki.dated(name, 'DNS:localhost,IP:127.0.0.1', start, end);
      const { code, stderr } = await serveUntilExit(['--envoy-compat'], {
        ...runtime.env,
        GRPC_SERVER_USE_TLS: 'true',
        GRPC_SERVER_TLS_CERT: cert.cert,
        GRPC_SERVER_TLS_KEY: cert.key,
      });
      assert.equal(code, 1, stderr);
      assert.match(stderr, /ERR_SLUICE_TLS_INVALID/);
      assert.match(stderr, what === 'expired' ? /expired on .*; renew it/ : /not valid before .*; check the clock/);
    });
  }
});

/** The 5-byte gRPC prefix of a 50-byte message and its first 3 bytes: a message that never finishes. */
const UNFINISHED = Buffer.from([0, 0, 0, 0, 50, 1, 2, 3]);

/** Starts a call on `path`, sends part of its message, and resolves with its grpc-status and when it came. */
function unfinishedCall(session: ClientHttp2Session, path: string): Promise<{ code: number; afterMs: number }> {
  const sentAt = performance.now();
  const stream = session.request({
    ':method': 'POST',
    ':path': path,
    'content-type': 'application/grpc',
    te: 'trailers',
  });
  stream.on('error', () => {});
  stream.write(UNFINISHED);
  return new Promise((resolve, reject) => {
    const done = (headers: Record<string, unknown>) => {
      if (headers['grpc-status'] !== undefined) {
        resolve({ code: Number(headers['grpc-status']), afterMs: performance.now() - sentAt });
      }
    };
    stream.on('response', done);
    stream.on('trailers', done);
    stream.on('close', () => reject(new Error(`${path}: closed without a gRPC status`)));
  });
}

describe('gRPC receive bound: an unfinished message', () => {
  let sluice: SluiceProcess;
  let session: ClientHttp2Session;
  before(async () => {
    sluice = await startSluice([]);
    session = sessionFrom(sluice.grpc, '127.0.0.1');
  });
  after(async () => {
    session?.destroy();
    await sluice?.stop();
  });

  it('is cut DEADLINE_EXCEEDED at the 10 s bound, not seconds later (ShouldRateLimit and health Check)', async () => {
    // Both at once: ShouldRateLimit takes the lean path, Check grpc-js's; one receive guard times both.
    const calls = await Promise.all([
      unfinishedCall(session, '/envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit'),
      unfinishedCall(session, '/grpc.health.v1.Health/Check'),
    ]);
    for (const { code, afterMs } of calls) {
      assert.equal(code, DEADLINE_EXCEEDED);
      // Never early. The fix cuts within 0.2 s; up to 12 s leaves room for a busy machine and stays below the
      // old sweep's earliest cut (12.5 s, up to 15 s).
      assert.ok(afterMs >= 9_900 && afterMs <= 12_000, `cut after ${Math.round(afterMs)} ms`);
    }
  });
});
