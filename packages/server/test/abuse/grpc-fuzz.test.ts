/**
 * Fuzzes both gRPC servers' stream handling at the HTTP/2 frame level: valid ShouldRateLimit calls cut,
 * split, reset and dropped at random points (between frames and inside them), several streams per
 * connection interleaved, declared message lengths that lie. The real `sluice serve` must neither crash
 * nor hang: it stays alive and a well-behaved probe keeps being answered. Seeded; the seed is printed on
 * failure (replay with SLUICE_FUZZ_SEED=<seed>).
 */
import assert from 'node:assert/strict';
import { connect as connectH2, constants } from 'node:http2';
import { connect, type Socket } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { encodeRateLimitRequestFrame } from '../../src/rls/wire.js';
import { type SluiceProcess, startSluice, tempFile } from '../integration/helpers.js';
import { data, goaway, grpcRequestHeaders, preface, rstStream, windowUpdate } from './h2-frames.js';
import { probeGrpc } from './probe.js';
import { createRng, fuzzSeed, type Rng } from './random.js';

const PATH = '/envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit';
const ITERATIONS = 120;
const PARALLEL = 8;
const PROBE_EVERY = 40;
const CONFIG = `domain: fuzz
descriptors:
  - key: k
    rate_limit: { unit: second, requests_per_unit: 1000000 }
`;

type Action = 'complete' | 'drop' | 'drop-mid-frame' | 'rst' | 'goaway' | 'half-close' | 'garbage' | 'linger';
const ACTIONS: readonly Action[] = [
  'complete',
  'drop',
  'drop-mid-frame',
  'rst',
  'goaway',
  'half-close',
  'garbage',
  'linger',
];

/** One connection's frames: the preface, then 1-3 interleaved calls, each possibly lying about its length. */
function scenario(rng: Rng): { frames: Buffer[]; streams: number[] } {
  const streams = Array.from({ length: 1 + rng.int(3) }, (_, i) => 1 + 2 * i);
  const perStream = streams.map((id) => {
    let message = encodeRateLimitRequestFrame({
      domain: 'fuzz',
      descriptors: [{ entries: [{ key: 'k', value: `v${rng.int(50)}` }] }],
      ...(rng.int(4) === 0 ? { hitsAddend: rng.int(3) } : {}),
    });
    const lie = rng.int(6);
    if (lie === 0) message.writeUInt32BE(message.readUInt32BE(1) + 1 + rng.int(4_000_000), 1);
    else if (lie === 1) message = message.subarray(0, 1 + rng.int(message.length - 1));
    else if (lie === 2) message[0] = 1; // "compressed", but it is not
    const cuts = [0, ...Array.from({ length: rng.int(3) }, () => rng.int(message.length)), message.length].sort(
      (a, b) => a - b,
    );
    const frames = [grpcRequestHeaders(id, rng.int(10) === 0 ? '/no.Such/Method' : PATH)];
    for (let i = 0; i + 1 < cuts.length; i++) {
      frames.push(data(id, message.subarray(cuts[i], cuts[i + 1]), i + 2 === cuts.length && rng.int(8) !== 0));
    }
    if (rng.int(6) === 0) frames.push(windowUpdate(id, 1 + rng.int(65535)));
    return frames;
  });
  const frames = [preface()];
  while (perStream.some((f) => f.length > 0)) {
    const open = perStream.filter((f) => f.length > 0);
    frames.push(rng.pick(open).shift() as Buffer);
  }
  return { frames, streams };
}

/** Writes `bytes` in random pieces, now and then letting the event loop (and the server) run between them. */
async function writeSplit(socket: Socket, bytes: Buffer, rng: Rng): Promise<void> {
  let at = 0;
  while (at < bytes.length && !socket.destroyed) {
    const n = 1 + rng.int(Math.min(bytes.length - at, rng.int(4) === 0 ? 7 : 400));
    socket.write(bytes.subarray(at, at + n));
    at += n;
    if (rng.int(3) === 0) await new Promise((r) => setImmediate(r));
  }
}

/** Runs one attack on a fresh connection; resolves when the connection is over (bounded). */
async function attack(port: number, rng: Rng): Promise<void> {
  const { frames, streams } = scenario(rng);
  const action = rng.pick(ACTIONS);
  const at = 1 + rng.int(frames.length);
  const socket = connect(port, '127.0.0.1');
  socket.on('error', () => {});
  socket.on('data', () => {});
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  await new Promise<void>((resolve) => socket.once('connect', () => resolve()).once('close', () => resolve()));
  const before = Buffer.concat(frames.slice(0, at));
  const rest = Buffer.concat(frames.slice(at));
  await writeSplit(socket, before, rng);
  switch (action) {
    case 'complete':
      await writeSplit(socket, rest, rng);
      break;
    case 'drop':
      socket.destroy();
      break;
    case 'drop-mid-frame':
      await writeSplit(socket, rest.subarray(0, rng.int(Math.max(1, rest.length))), rng);
      socket.destroy();
      break;
    case 'rst':
      socket.write(rstStream(rng.pick(streams), rng.int(14)));
      await writeSplit(socket, rest, rng);
      break;
    case 'goaway':
      socket.write(goaway(rng.pick(streams), rng.int(14)));
      await writeSplit(socket, rest, rng);
      socket.end();
      break;
    case 'half-close':
      socket.end();
      break;
    case 'garbage':
      socket.write(Buffer.from(Array.from({ length: 1 + rng.int(64) }, () => rng.int(256))));
      await writeSplit(socket, rest, rng);
      break;
    case 'linger':
      // Leave the rest unsent; the connection is dropped below, with the calls half-received.
      break;
  }
  // Give the server a moment to answer what it got, then drop whatever is left: bounded either way.
  const grace = new Promise<void>((resolve) => setTimeout(resolve, 20 + rng.int(150)));
  await Promise.race([closed, grace]);
  socket.destroy();
  await closed;
}

type ClientEnd = 'session-destroy' | 'session-close' | 'stream-reset' | 'socket-drop' | 'end-partial' | 'end-complete';
const CLIENT_ENDS: readonly ClientEnd[] = [
  'session-destroy',
  'session-close',
  'stream-reset',
  'socket-drop',
  'end-partial',
  'end-complete',
];

/**
 * The same through Node's HTTP/2 client, which honours flow control, so a call can get megabytes into a
 * declared message before the client resets it, drops the connection or ends it early.
 */
async function attackWithClient(port: number, rng: Rng): Promise<void> {
  let socket: Socket | undefined;
  const session = connectH2(`http://127.0.0.1:${port}`, {
    createConnection: () => {
      socket = connect(port, '127.0.0.1');
      return socket;
    },
  });
  session.on('error', () => {});
  const closed = new Promise<void>((resolve) => session.once('close', () => resolve()));
  const streams = Array.from({ length: 1 + rng.int(3) }, () => {
    const stream = session.request({
      ':method': 'POST',
      ':path': PATH,
      'content-type': 'application/grpc',
      te: 'trailers',
    });
    stream.on('error', () => {});
    stream.on('data', () => {});
    const declared = rng.int(2) === 0 ? 4 * 1024 * 1024 : 1 + rng.int(2 * 1024 * 1024);
    const prefix = Buffer.alloc(5);
    prefix.writeUInt32BE(declared, 1);
    stream.write(prefix);
    let sent = 0;
    const target = rng.int(Math.min(declared, 1_200_000));
    while (sent < target) {
      const n = Math.min(target - sent, 1 + rng.int(256 * 1024));
      stream.write(Buffer.alloc(n));
      sent += n;
    }
    return stream;
  });
  await new Promise((resolve) => setTimeout(resolve, rng.int(120)));
  const end = rng.pick(CLIENT_ENDS);
  if (end === 'session-destroy') session.destroy();
  else if (end === 'session-close') session.close();
  else if (end === 'socket-drop') socket?.destroy();
  else {
    for (const stream of streams) {
      if (end === 'stream-reset') stream.close(rng.pick([constants.NGHTTP2_CANCEL, constants.NGHTTP2_INTERNAL_ERROR]));
      else stream.end(end === 'end-complete' ? Buffer.alloc(0) : undefined);
    }
  }
  const grace = new Promise<void>((resolve) => setTimeout(resolve, 50 + rng.int(200)));
  await Promise.race([closed, grace]);
  session.destroy();
  await closed;
}

describe(`gRPC stream fuzzing`, () => {
  let sluice: SluiceProcess;
  let config: ReturnType<typeof tempFile>;
  before(async () => {
    config = tempFile('fuzz.yaml', CONFIG);
    sluice = await startSluice(['--config', config.path, '--no-watch']);
  });
  after(async () => {
    await sluice?.stop();
    config?.remove();
  });

  it('survives random splits, resets, drops and lies at every point of a call', async () => {
    const seed = fuzzSeed();
    const rng = createRng(seed);
    const why = (what: string) => `${what} (seed ${seed}; replay with SLUICE_FUZZ_SEED=${seed})`;
    try {
      for (let done = 0; done < ITERATIONS; done += PARALLEL) {
        await Promise.all(
          Array.from({ length: PARALLEL }, (_, i) =>
            (i % 2 === 0 ? attack : attackWithClient)(sluice.grpc, createRng(rng.int(2 ** 31))),
          ),
        );
        assert.equal(sluice.child.exitCode, null, why(`sluice exited: ${sluice.stderr()}`));
        if ((done + PARALLEL) % PROBE_EVERY === 0) {
          const probe = await probeGrpc(sluice.grpc, 'fuzz');
          assert.equal(probe.status, 0, why(`a probe call after ${done + PARALLEL} attacks answered ${probe.status}`));
        }
      }
      const last = await probeGrpc(sluice.grpc, 'fuzz');
      assert.equal(last.status, 0, why('the last probe failed'));
      assert.equal(sluice.child.exitCode, null, why('sluice exited'));
    } catch (error) {
      console.error(why('gRPC fuzzing failed'));
      throw error;
    }
  });
});
