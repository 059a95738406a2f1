/**
 * Health Watch slots (issue 37, item 7), against the real `sluice serve`: one client address opening many
 * connections, each with as many Watch calls as a connection may hold, used to take every slot of the
 * service, so another client's Watch got RESOURCE_EXHAUSTED and its health checking marked the service
 * down. Loopback has many addresses: the attacker connects from 127.0.0.1, the other client from 127.0.0.2.
 */
import assert from 'node:assert/strict';
import { type ClientHttp2Session, connect, type SecureClientSessionOptions } from 'node:http2';
import { after, before, describe, it } from 'node:test';
import { rawWatch } from '../envoy/health-client.js';
import { type SluiceProcess, startSluice } from '../integration/helpers.js';

const RESOURCE_EXHAUSTED = 8;

function sessionFrom(port: number, localAddress: string): ClientHttp2Session {
  // http2.connect passes net.connect's options on (its types leave localAddress out).
  const session = connect(`http://127.0.0.1:${port}`, { localAddress } as SecureClientSessionOptions);
  session.on('error', () => {});
  return session;
}

describe('health Watch: one address cannot take every slot', () => {
  let sluice: SluiceProcess;
  const sessions: ClientHttp2Session[] = [];
  before(async () => {
    sluice = await startSluice([]);
  });
  after(async () => {
    for (const s of sessions) s.destroy();
    await sluice?.stop();
  });

  it('63 connections × 16 watches from one address get at most 64; another address is still served', async () => {
    const outcomes: Promise<'watching' | 'refused' | 'other'>[] = [];
    for (let c = 0; c < 63; c++) {
      const session = sessionFrom(sluice.grpc, '127.0.0.1');
      sessions.push(session);
      for (let w = 0; w < 16; w++) {
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
    const watching = results.filter((r) => r === 'watching').length;
    assert.equal(results.filter((r) => r === 'other').length, 0);
    assert.ok(watching >= 16 && watching <= 64, `one address holds ${watching} watches`);

    const other = sessionFrom(sluice.grpc, '127.0.0.2');
    sessions.push(other);
    const watch = rawWatch(other, '');
    assert.equal(await watch.nth(1), 'SERVING', 'another client still gets its Watch');
  });
});
