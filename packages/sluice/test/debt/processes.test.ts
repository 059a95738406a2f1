/**
 * Several processes on one key (issue 40), on a real Redis: 4 child processes reserve 10 units at a time, one in
 * flight each, and settle 0–30 — up to 20 over, charged as debt — until the limit refuses them. The window admits
 * at most its limit plus one request's overshoot per process in flight (4 × 20), every unit used is charged, and the
 * store's count is exactly what the processes were charged.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { type RedisServerHandle, startRedis } from '../../../../test/helpers/redis-server.js';

const CHILD = fileURLToPath(new URL('./fixtures/reserve-child.ts', import.meta.url));
const LIMIT = 2000;
const MAX_OVERSHOOT = 20;

interface Answer {
  admitted: number;
  charged: number;
  overshoot: number;
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

describe('debt: 4 processes on one key (Redis)', () => {
  let server: RedisServerHandle;
  before(async () => {
    server = await startRedis();
  });
  after(async () => {
    await server?.stop();
  });

  for (const base of [1, 11]) {
    it(`at most the limit plus one overshoot per process in flight (seeds ${base}…${base + 3})`, async () => {
      const prefix = `debtproc${base}:`;
      const answers = await Promise.all([0, 1, 2, 3].map((i) => runChild(server.port, base + i, prefix)));
      for (const a of answers) assert.equal(a.error, undefined, a.error);
      const charged = answers.reduce((n, a) => n + a.charged, 0);
      assert.ok(Math.max(...answers.map((a) => a.overshoot)) > 0, 'some settles went over their reservation');
      assert.ok(charged > LIMIT - 10, `the window was filled: no room for another 10 (${charged})`);
      const bound = LIMIT + 4 * MAX_OVERSHOOT;
      assert.ok(charged <= bound, `charged ${charged} ≤ ${bound}`);
      const admin = new Redis(server.port, '127.0.0.1');
      try {
        const keys = await admin.keys(`${prefix}*`);
        assert.equal(keys.length, 1);
        const count = Number(String(await admin.get(keys[0] as string)).split(':')[1]);
        assert.equal(count, charged, 'the store holds exactly what was charged');
      } finally {
        admin.disconnect();
      }
    });
  }
});
