/**
 * Concurrency leases through `POST /v1/check` on the memory store (issue 37, items 2 and 13), against the
 * real `sluice serve`: a flood of one-day leases stays within the store's byte bound, a batch of refused
 * acquires or bogus releases at a large lease count costs no more than the same batch on an empty key, and a
 * lease id tells nothing of another caller's.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { postJson, type SluiceProcess, startSluice, unique } from '../integration/helpers.js';
import { cpuSpent } from './harness.js';

const DAY_MS = 86_400_000;
const BATCH = 1000;

interface CheckAnswer {
  allowed?: boolean;
  released?: boolean;
  lease?: { id: string; expiresAt: number };
  error?: { code: string };
}

async function send(sluice: SluiceProcess, checks: unknown[]): Promise<CheckAnswer[]> {
  const r = await postJson(`http://127.0.0.1:${sluice.http}/v1/check`, { checks });
  assert.equal(r.status, 200, r.text.slice(0, 300));
  return (r.json as { results: CheckAnswer[] }).results;
}

const acquires = (key: (i: number) => string, limit: number) =>
  Array.from({ length: BATCH }, (_, i) => ({ key: key(i), op: 'acquire', limit, leaseMs: DAY_MS }));

describe('leases: a flood stays within --memory-max-bytes', () => {
  let sluice: SluiceProcess;
  before(async () => {
    sluice = await startSluice(['--memory-max-bytes', '1mb']);
  });
  after(async () => {
    await sluice?.stop();
  });

  it('admits at most half the store bytes worth of leases, then refuses, and still answers others', async () => {
    const prefix = unique('flood');
    let admitted = 0;
    // 30,000 one-day acquires over 300 keys, each key's limit far above what it gets.
    for (let round = 0; round < 30; round++) {
      const results = await send(
        sluice,
        acquires((i) => `${prefix}:${(round * BATCH + i) % 300}`, 10_000),
      );
      admitted += results.filter((r) => r.allowed === true).length;
    }
    // 512 KiB at the documented 160 bytes a lease (and 200 a key): a few thousand, never all 30,000.
    assert.ok(admitted > 1000, `admitted ${admitted}`);
    assert.ok(admitted <= (512 * 1024) / 160, `admitted ${admitted} leases with a 1 MB store`);
    // A plain check still decides, and a lease given back makes room for another.
    const [check] = await send(sluice, [{ key: unique('other'), limit: 5, period: '1m' }]);
    assert.equal(check?.allowed, true);
  });
});

describe('leases: every operation costs O(log n), and ids are unguessable', () => {
  let sluice: SluiceProcess;
  before(async () => {
    sluice = await startSluice([]);
  });
  after(async () => {
    await sluice?.stop();
  });

  it('1,000 refused acquires and 1,000 bogus releases at 40,000 leases cost what they cost on a small key', async () => {
    const big = unique('big');
    const limit = 40_000;
    for (let round = 0; round < limit / BATCH; round++) {
      const results = await send(
        sluice,
        acquires(() => big, limit),
      );
      assert.ok(results.every((r) => r.allowed === true));
    }
    const small = unique('small');
    await send(sluice, [{ key: small, op: 'acquire', limit: 1, leaseMs: DAY_MS }]);
    const batchOn = (key: string, limitOf: number) => async () => {
      // Warm both paths first, then measure: refused acquires, then releases of ids nobody holds.
      await send(
        sluice,
        acquires(() => key, limitOf),
      );
      const refused = await send(
        sluice,
        acquires(() => key, limitOf),
      );
      const bogus = await send(
        sluice,
        Array.from({ length: BATCH }, (_, i) => ({ key, op: 'release', lease: `guess-${i}` })),
      );
      return { refused, bogus };
    };
    const onSmall = await cpuSpent(sluice.pid, batchOn(small, 1));
    const onBig = await cpuSpent(sluice.pid, batchOn(big, limit));
    assert.ok(onBig.result.refused.every((r) => r.allowed === false));
    assert.ok(onBig.result.bogus.every((r) => r.released === false));
    // A scan of every lease per call cost the old table over a second here; 10 ms steps in /proc.
    assert.ok(
      onBig.ms <= 3 * onSmall.ms + 100,
      `the batches cost ${onBig.ms} ms of CPU at ${limit} leases, ${onSmall.ms} ms on a key with one`,
    );
  });

  it('lease ids are 128 random bits: 20 guesses near a known id release nothing', async () => {
    const key = unique('guess');
    const results = await send(sluice, [
      { key, op: 'acquire', limit: 10, leaseMs: DAY_MS },
      { key, op: 'acquire', limit: 10, leaseMs: DAY_MS },
    ]);
    const ids = results.map((r) => r.lease?.id ?? '');
    for (const id of ids) assert.match(id, /^[A-Za-z0-9_-]{22}$/);
    assert.notEqual(ids[0], ids[1]);
    // The old ids were `<ms base36>.<seq base36>`: neighbours of one were the next callers' ids.
    const guesses = Array.from({ length: 20 }, (_, i) => `${ids[0]?.slice(0, 21)}${'ABCDEFGHIJKLMNOPQRST'[i]}`);
    const released = await send(
      sluice,
      guesses.filter((g) => !ids.includes(g)).map((lease) => ({ key, op: 'release', lease })),
    );
    assert.ok(released.every((r) => r.released === false));
    const [again] = await send(sluice, [{ key, op: 'release', lease: ids[1] }]);
    assert.equal(again?.released, true);
  });
});
