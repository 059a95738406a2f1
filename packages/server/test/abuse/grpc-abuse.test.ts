/**
 * Attacks on both gRPC servers of the real `sluice serve` (issue 12, items 1 and 8): clients that leave in
 * the middle of a message, and clients that open many streams, send part of a message on each and wait.
 * The service must stay up and answer another client within 1 s throughout, refuse the attack with gRPC
 * codes, and hold no more than its stated budgets.
 */
import assert from 'node:assert/strict';
import { type ClientHttp2Session, type ClientHttp2Stream, connect } from 'node:http2';
import { after, before, describe, it } from 'node:test';
import { type SluiceProcess, startSluice, tempFile } from '../integration/helpers.js';
import { MB, underAttack } from './harness.js';
import { probeGrpc } from './probe.js';

const PATH = '/envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit';
const CONFIG = `domain: probe
descriptors:
  - key: probe
    rate_limit: { unit: second, requests_per_unit: 1000000 }
`;
/** Stated bounds: the service's peak RSS (it idles near 110 MB under tsx) and its /metrics size. */
const BOUNDS = { maxRssBytes: 400 * MB, maxMetricsBytes: 64 * 1024 };
const DECLARED = 1_000_000;
const PART = Buffer.alloc(600_000, 7);
/** The attacker queues megabytes on its side: lift Node's own 10 MB client session cap so they reach the server. */
const ATTACKER = { maxSessionMemory: 1024 };

/** Opens a stream that declares a `DECLARED`-byte message and sends `part` of it; resolves with its grpc-status. */
function partialCall(
  session: ClientHttp2Session,
  part: Buffer,
): { stream: ClientHttp2Stream; status: Promise<string> } {
  const stream = session.request({
    ':method': 'POST',
    ':path': PATH,
    'content-type': 'application/grpc',
    te: 'trailers',
  });
  const prefix = Buffer.alloc(5);
  prefix.writeUInt32BE(DECLARED, 1);
  stream.write(prefix);
  stream.write(part);
  const status = new Promise<string>((resolve) => {
    let code = 'none';
    stream.on('response', (h) => {
      if (h['grpc-status'] !== undefined) code = String(h['grpc-status']);
    });
    stream.on('trailers', (t) => {
      if (t['grpc-status'] !== undefined) code = String(t['grpc-status']);
    });
    stream.on('data', () => {});
    stream.on('error', () => {});
    stream.on('close', () => resolve(code));
  });
  return { stream, status };
}

describe(`gRPC abuse`, () => {
  let sluice: SluiceProcess;
  let config: ReturnType<typeof tempFile>;
  before(async () => {
    config = tempFile('probe.yaml', CONFIG);
    sluice = await startSluice(['--config', config.path, '--no-watch', '--grpc-message-timeout', '2s']);
  });
  after(async () => {
    await sluice?.stop();
    config?.remove();
  });
  const probe = () => probeGrpc(sluice.grpc);

  it(
    'survives clients that leave in the middle of a message (reset, dropped, closed)',
    { timeout: 60_000 },
    async () => {
      await underAttack(sluice, probe, 0, BOUNDS, async () => {
        for (let round = 0; round < 12; round++) {
          const session = connect(`http://127.0.0.1:${sluice.grpc}`, ATTACKER);
          session.on('error', () => {});
          const calls = [partialCall(session, PART), partialCall(session, PART)];
          await new Promise((resolve) => setTimeout(resolve, 30 + round * 10));
          if (round % 3 === 0) session.destroy();
          else if (round % 3 === 1) for (const c of calls) c.stream.close();
          else session.close();
          session.destroy();
          await Promise.all(calls.map((c) => c.status));
        }
      });
    },
  );

  it(
    'bounds unfinished messages per connection and in time (RESOURCE_EXHAUSTED, DEADLINE_EXCEEDED)',
    { timeout: 60_000 },
    async () => {
      const statuses = await underAttack(sluice, probe, 0, BOUNDS, async () => {
        const sessions = Array.from({ length: 2 }, () => connect(`http://127.0.0.1:${sluice.grpc}`, ATTACKER));
        const calls = sessions.flatMap((session) => {
          session.on('error', () => {});
          return Array.from({ length: 100 }, () => partialCall(session, PART));
        });
        const all = await Promise.all(calls.map((c) => c.status));
        for (const session of sessions) session.destroy();
        return all;
      });
      const counts: Record<string, number> = {};
      for (const s of statuses) counts[s] = (counts[s] ?? 0) + 1;
      // Every call is refused: 8 = RESOURCE_EXHAUSTED (a budget was full when its bytes came), 4 =
      // DEADLINE_EXCEEDED (it fit, but its message never completed). Which of the two depends on timing.
      assert.deepEqual(
        Object.keys(counts).filter((code) => code !== '4' && code !== '8'),
        [],
        JSON.stringify(counts),
      );
      assert.ok((counts['8'] ?? 0) > 0, `some calls met a budget: ${JSON.stringify(counts)}`);
    },
  );

  it('refuses a declared message over the size limit at once', { timeout: 60_000 }, async () => {
    const session = connect(`http://127.0.0.1:${sluice.grpc}`, ATTACKER);
    session.on('error', () => {});
    const stream = session.request({
      ':method': 'POST',
      ':path': PATH,
      'content-type': 'application/grpc',
      te: 'trailers',
    });
    const prefix = Buffer.alloc(5);
    prefix.writeUInt32BE(4 * MB, 1);
    stream.write(prefix);
    stream.write(Buffer.alloc(1000));
    const status = await new Promise<string>((resolve) => {
      let code = 'none';
      stream.on('response', (h) => {
        if (h['grpc-status'] !== undefined) code = String(h['grpc-status']);
      });
      stream.on('trailers', (t) => {
        if (t['grpc-status'] !== undefined) code = String(t['grpc-status']);
      });
      stream.on('data', () => {});
      stream.on('error', () => {});
      stream.on('close', () => resolve(code));
    });
    session.destroy();
    assert.equal(status, '8');
  });
});
