/**
 * Token reservations from many processes on one key (issue 40), on a real Redis: 4 child processes
 * reserve random requests 8 at a time and settle them at random (under, over, aborted part-way,
 * cancelled). Whatever the interleaving, the counter holds exactly what was charged — no refund or
 * extra lost, every extra charged (debt) — and the window admits at most its limit plus the overshoots
 * of the requests in flight when it filled (at most 100 tokens each, 32 at a time).
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { type RedisServerHandle, startRedis } from '../../../../test/helpers/redis-server.js';
import { createTokenLimiter } from '../../src/llm/create-token-limiter.js';
import { createRedisStore } from '../../src/stores/redis/index.js';

const CHILD = fileURLToPath(new URL('./fixtures/token-reservations-child.ts', import.meta.url));
const LIMIT = 5000;
const T0 = 1_700_000_000_000;

interface Answer {
  admitted: number;
  charged: number;
  used: number;
  outstanding: number;
  error?: string;
}

/** Runs one child to its end; stops it by its PID if it has not answered within 60 s. */
function runChild(port: number, seed: number, prefix: string): Promise<Answer> {
  const child = spawn(process.execPath, ['--import', 'tsx', CHILD, String(port), String(seed), prefix], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const lines = createInterface({ input: child.stdout });
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`child with seed ${seed} did not answer within 60 s`));
    }, 60_000);
    lines.once('line', (line) => {
      clearTimeout(timer);
      resolve(JSON.parse(line) as Answer);
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`child with seed ${seed} exited (${code}) without an answer`));
    });
  });
}

describe('token reservations: 4 processes on one key (Redis)', () => {
  let server: RedisServerHandle;
  before(async () => {
    server = await startRedis();
  });
  after(async () => {
    await server?.stop();
  });

  for (const base of [1]) {
    it(`the counter holds exactly what was charged, at most the limit plus the in-flight overshoots (seeds ${base}…${base + 3})`, async () => {
      const prefix = `tokproc${base}:`;
      const answers = await Promise.all([0, 1, 2, 3].map((i) => runChild(server.port, base + i, prefix)));
      for (const a of answers) assert.equal(a.error, undefined, a.error);
      const charged = answers.reduce((n, a) => n + a.charged, 0);
      const admitted = answers.reduce((n, a) => n + a.admitted, 0);
      assert.ok(admitted > 20, `enough requests were admitted to mean something (${admitted})`);
      assert.ok(charged > LIMIT / 2, `the limit was approached (${charged} of ${LIMIT})`);
      const used = answers.reduce((n, a) => n + a.used, 0);
      assert.equal(charged, used, 'every token used was charged: no extra dropped');
      const bound = LIMIT + 32 * 100;
      assert.ok(charged <= bound, `charged ${charged} ≤ the limit + the in-flight overshoots (${bound})`);
      for (const a of answers) assert.equal(a.outstanding, 0, 'every reservation was settled or cancelled');

      const client = new Redis(server.port, '127.0.0.1');
      try {
        const store = createRedisStore({ client, clock: 'client', timeoutMs: 10_000, prefix });
        const probe = createTokenLimiter({
          totalTokens: { limit: LIMIT, period: '10d', algorithm: 'fixed-window' },
          store,
          clock: { now: () => T0 },
        });
        const r = await probe.reserve('shared', { inputTokens: 0, maxOutputTokens: 0 });
        const left = r.decision.results?.find((x) => x.name === 'totalTokens')?.decision.remaining;
        assert.equal(left, Math.max(0, LIMIT - charged), 'remaining never below 0');
        // The window's count, as stored ("window:count" on the client clock): exactly what was charged.
        const keys = await client.keys(`${prefix}*`);
        assert.equal(keys.length, 1, 'one key: the window of totalTokens');
        const [stateKey] = keys;
        const stored = String(await client.get(stateKey as string)).split(':')[1];
        assert.equal(Number(stored), charged, 'the store counted exactly what the processes were charged');
      } finally {
        client.disconnect();
      }
    });
  }
});
