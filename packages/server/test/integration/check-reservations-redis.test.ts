/**
 * `/v1/check` reservations that outlive their process (issue 40): two real `sluice serve` on one test Redis
 * record reservations there — one reserves, the other settles by id exactly once; an instance killed with
 * reservations open leaves records the other settles before they lapse and claims after (charged in full,
 * Redis left empty). Time is the caller's (--client-clock): lapsing is driven, not waited for.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Redis } from 'ioredis';
import { type RedisServerHandle, startRedis } from '../../../../test/helpers/redis-server.js';
import { postJson, type SluiceProcess, startSluice, unique } from './helpers.js';

type Result = Record<string, unknown> & {
  error?: { code: string; message: string };
  reservation?: { id: string; expiresAt: number };
};

const T0 = 1_900_000_000_000;
const TTL_MS = 10_000;
const RECORDS = 'sluice:{resv:check-reservations}:records';

describe('/v1/check reservations on Redis, across instances', { timeout: 120_000 }, () => {
  let redis: RedisServerHandle;
  let client: Redis;
  let a: SluiceProcess;
  let b: SluiceProcess;
  const start = () => startSluice(['--redis', redis.url, '--client-clock', '--reservation-ttl', `${TTL_MS / 1000}s`]);
  before(async () => {
    redis = await startRedis();
    client = new Redis(redis.url, { lazyConnect: true });
    await client.connect();
    [a, b] = await Promise.all([start(), start()]);
  });
  after(async () => {
    await Promise.all([a?.stop(), b?.stop()]);
    client?.disconnect();
    await redis?.stop();
  });

  async function send(to: SluiceProcess, ...checks: unknown[]): Promise<Result[]> {
    const res = await postJson(`http://127.0.0.1:${to.http}/v1/check`, { checks });
    assert.equal(res.status, 200, res.text);
    return (res.json as { results: Result[] }).results;
  }
  const policy = (nowMs: number) => ({ limit: 1000, period: '1h', nowMs });
  const remaining = async (to: SluiceProcess, key: string, nowMs = T0) =>
    (await send(to, { key, ...policy(nowMs), op: 'peek', cost: 0 }))[0]?.remaining as number;

  it('reserved on one instance, settled on the other, exactly once', async () => {
    const key = unique('across');
    const [r] = await send(a, { key, ...policy(T0), op: 'reserve', cost: 300 });
    const id = r?.reservation?.id as string;
    assert.equal(r?.allowed, true);
    // The wrong key is refused and the reservation stays open for the right one.
    const [wrong] = await send(b, { key: `${key}-x`, ...policy(T0), op: 'settle', reservation: id, cost: 1 });
    assert.equal(wrong?.error?.code, 'ERR_SLUICE_RESERVATION_MISMATCH');
    const [s] = await send(b, { key, ...policy(T0 + 1), op: 'settle', reservation: id, cost: 120 });
    assert.deepEqual(s, { settled: true, reserved: 300, charged: 120, refunded: 180 });
    assert.equal(await remaining(a, key), 880);
    // Settled on B: a second settle, on either instance, changes nothing.
    const [again] = await send(a, { key, ...policy(T0 + 2), op: 'settle', reservation: id, cost: 5 });
    assert.equal(again?.error?.code, 'ERR_SLUICE_RESERVATION_SETTLED');
    const [onB] = await send(b, { key, ...policy(T0 + 2), op: 'cancel', reservation: id });
    assert.equal(onB?.error?.code, 'ERR_SLUICE_RESERVATION_SETTLED');
    assert.equal(await remaining(b, key), 880);
  });

  it('many instances settling one reservation at once: exactly one settles', async () => {
    const key = unique('race');
    const [r] = await send(a, { key, ...policy(T0), op: 'reserve', cost: 500 });
    const item = { key, ...policy(T0 + 1), op: 'settle', reservation: r?.reservation?.id, cost: 100 };
    const answers = (await Promise.all(Array.from({ length: 20 }, (_, i) => send(i % 2 ? a : b, item)))).flat();
    assert.equal(answers.filter((x) => x.settled === true).length, 1);
    assert.equal(await remaining(a, key), 900);
  });

  it('an instance killed with reservations open: the other settles them, then claims the lapsed ones', async () => {
    const key = unique('crash');
    const reserve = { key, ...policy(T0), op: 'reserve', cost: 100 };
    const held = await send(a, reserve, reserve, reserve);
    const ids = held.map((r) => r.reservation?.id as string);
    assert.equal(await client.hlen(RECORDS), 3);
    const killed = await a.stop('SIGKILL');
    assert.equal(killed.signal, 'SIGKILL');
    // Before its time is up, a dead instance's reservation is settled on another.
    const [s] = await send(b, { key, ...policy(T0 + 5), op: 'settle', reservation: ids[0], cost: 40 });
    assert.deepEqual(s, { settled: true, reserved: 100, charged: 40, refunded: 60 });
    // Past it, the next call claims the rest: charged in full, the records gone, a late settle coded.
    const late = T0 + TTL_MS + 1;
    const [expired] = await send(b, { key, ...policy(late), op: 'settle', reservation: ids[1], cost: 1 });
    assert.equal(expired?.error?.code, 'ERR_SLUICE_RESERVATION_EXPIRED');
    assert.equal(await client.hlen(RECORDS), 0);
    assert.equal(await remaining(b, key, late), 1000 - 40 - 100 - 100);
    const [other] = await send(b, { key, ...policy(late), op: 'cancel', reservation: ids[2] });
    assert.equal(other?.error?.code, 'ERR_SLUICE_RESERVATION_EXPIRED');
    a = await start();
  });

  it('hostile settles: made-up, huge and non-string ids get coded answers and touch nothing', async () => {
    const key = unique('hostile');
    const [r] = await send(b, { key, ...policy(T0), op: 'reserve', cost: 10 });
    const flood = Array.from({ length: 200 }, (_, i) => ({
      key,
      ...policy(T0 + 1),
      op: 'settle',
      reservation: i % 3 === 0 ? `x${i}` : i % 3 === 1 ? 'y'.repeat(65) : i,
      cost: 1,
    }));
    const answers = await send(a, ...flood);
    const codes = new Set(answers.map((x) => x.error?.code));
    assert.deepEqual([...codes].sort(), ['ERR_SLUICE_INVALID_REQUEST', 'ERR_SLUICE_RESERVATION_UNKNOWN']);
    const [s] = await send(a, { key, ...policy(T0 + 2), op: 'settle', reservation: r?.reservation?.id, cost: 10 });
    assert.equal(s?.settled, true);
    assert.equal(await client.hlen(RECORDS), 0);
  });
});
