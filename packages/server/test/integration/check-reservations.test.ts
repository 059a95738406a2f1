/**
 * `/v1/check` reservations on a real `sluice serve` (issue 40): reserve takes the estimate and answers an
 * id, settle moves the charge to the actual cost exactly, cancel gives it all back; unknown, double,
 * mismatched and lapsed settles get coded answers; a flood of reserves stops at --max-reservations with a
 * coded refusal, and the service still answers others. Time is the caller's (--client-clock).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { postJson, type SluiceProcess, startSluice, unique } from './helpers.js';

type Result = Record<string, unknown> & {
  error?: { code: string; message: string };
  reservation?: { id: string; expiresAt: number };
};

const T0 = 1_900_000_000_000;

describe('/v1/check reserve, settle, cancel', { timeout: 60_000 }, () => {
  let service: SluiceProcess;
  let url: string;
  before(async () => {
    service = await startSluice(['--client-clock', '--reservation-ttl', '10s', '--max-reservations', '50']);
    url = `http://127.0.0.1:${service.http}/v1/check`;
  });
  after(() => service.stop());

  async function send(...checks: unknown[]): Promise<Result[]> {
    const res = await postJson(url, { checks });
    assert.equal(res.status, 200, res.text);
    return (res.json as { results: Result[] }).results;
  }
  const policy = { limit: 1000, period: '1h', nowMs: T0 };
  const remaining = async (key: string) =>
    (await send({ key, ...policy, op: 'peek', cost: 0 }))[0]?.remaining as number;

  it('settle gives back what was not used and takes what was, exactly', async () => {
    const key = unique('tokens');
    const [r] = await send({ key, ...policy, op: 'reserve', cost: 300 });
    assert.equal(r?.allowed, true);
    assert.equal(r?.remaining, 700);
    assert.equal(typeof r?.reservation?.id, 'string');
    assert.equal(r?.reservation?.expiresAt, T0 + 10_000);
    const id = r?.reservation?.id as string;
    const [s] = await send({ key, ...policy, op: 'settle', reservation: id, cost: 120 });
    assert.deepEqual(s, { settled: true, reserved: 300, charged: 120, refunded: 180 });
    assert.equal(await remaining(key), 880);
    const [r2] = await send({ key, ...policy, op: 'reserve', cost: 100 });
    const [s2] = await send({ key, ...policy, op: 'settle', reservation: r2?.reservation?.id, cost: 250 });
    assert.deepEqual(s2, { settled: true, reserved: 100, charged: 250, refunded: 0 });
    assert.equal(await remaining(key), 630);
  });

  it('cancel gives everything back; a refused reserve holds nothing', async () => {
    const key = unique('cancel');
    const [r] = await send({ key, ...policy, op: 'reserve', cost: 900 });
    const [refused] = await send({ key, ...policy, op: 'reserve', cost: 200 });
    assert.equal(refused?.allowed, false);
    assert.equal(refused?.reservation, undefined);
    const [c] = await send({ key, ...policy, op: 'cancel', reservation: r?.reservation?.id });
    assert.deepEqual(c, { settled: true, reserved: 900, charged: 0, refunded: 900 });
    assert.equal(await remaining(key), 1000);
  });

  it('double, unknown, mismatched and lapsed settles are coded answers beside good ones', async () => {
    const key = unique('coded');
    const [a, b] = await send({ key, ...policy, op: 'reserve', cost: 10 }, { key, ...policy, op: 'reserve', cost: 10 });
    const idA = a?.reservation?.id as string;
    const idB = b?.reservation?.id as string;
    await send({ key, ...policy, op: 'settle', reservation: idA, cost: 5 });
    const answers = await send(
      { key, ...policy, op: 'settle', reservation: idA, cost: 5 },
      { key, ...policy, op: 'settle', reservation: 'no.such.id', cost: 5 },
      { key: `${key}-other`, ...policy, op: 'settle', reservation: idB, cost: 5 },
      { key, ...policy, limit: 999, op: 'settle', reservation: idB, cost: 5 },
      { key, ...policy, op: 'settle', reservation: idB, cost: -1 },
      { key, ...policy, op: 'settle', reservation: idB, cost: 1e12 },
      { key, ...policy, op: 'settle', reservation: idB },
      { key, ...policy, op: 'settle', reservation: 'x'.repeat(100_000), cost: 1 },
      { key, ...policy, op: 'settle', reservation: { id: idB }, cost: 1 },
      { key, ...policy, op: 'check', reservation: idB },
      { key, ...policy, op: 'settle', reservation: idB, cost: 10 },
    );
    assert.deepEqual(
      answers.map((r) => r.error?.code ?? 'ok'),
      [
        'ERR_SLUICE_RESERVATION_SETTLED',
        'ERR_SLUICE_RESERVATION_UNKNOWN',
        'ERR_SLUICE_RESERVATION_MISMATCH',
        'ERR_SLUICE_RESERVATION_MISMATCH',
        'ERR_SLUICE_INVALID_COST',
        'ERR_SLUICE_INVALID_COST',
        'ERR_SLUICE_INVALID_COST',
        'ERR_SLUICE_INVALID_REQUEST',
        'ERR_SLUICE_INVALID_REQUEST',
        'ERR_SLUICE_INVALID_REQUEST',
        'ok',
      ],
    );
    // The mismatched and invalid settles left it open: the last one settled it at 10, nothing moved.
    assert.equal(await remaining(key), 985);
    // A reservation past its time lapses charged in full; settling it then is a coded answer.
    const [late] = await send({ key, ...policy, op: 'reserve', cost: 100 });
    const after = { key, ...policy, nowMs: T0 + 10_000 };
    const [lapsed] = await send({ ...after, op: 'settle', reservation: late?.reservation?.id, cost: 1 });
    assert.equal(lapsed?.error?.code, 'ERR_SLUICE_RESERVATION_EXPIRED');
    assert.equal((await send({ ...after, op: 'peek', cost: 0 }))[0]?.remaining, 885);
  });

  it('a reserve flood stops at --max-reservations with a coded refusal; others still answer', async () => {
    const key = unique('flood');
    // Lapse whatever the earlier cases left open, at a later time.
    const later = { ...policy, nowMs: T0 + 60_000 };
    await send({ key: unique('sweep'), ...later, op: 'reserve', cost: 1 });
    const reserves = Array.from({ length: 1000 }, (_, i) => ({ key: `${key}:${i}`, ...later, op: 'reserve', cost: 1 }));
    const results = await send(...reserves);
    const held = results.filter((r) => r.reservation !== undefined).length;
    const refused = results.filter((r) => r.error?.code === 'ERR_SLUICE_TOO_MANY_RESERVATIONS').length;
    assert.equal(held, 49);
    assert.equal(refused, 951);
    // A settle flood of unknown ids is answered item by item.
    const bogus = Array.from({ length: 1000 }, (_, i) => ({
      key,
      ...later,
      op: 'settle',
      reservation: `x${i}`,
      cost: 1,
    }));
    assert.ok((await send(...bogus)).every((r) => r.error?.code === 'ERR_SLUICE_RESERVATION_UNKNOWN'));
    assert.equal((await send({ key: unique('plain'), ...later }))[0]?.allowed, true);
    const health = await fetch(`http://127.0.0.1:${service.http}/healthcheck`);
    assert.equal(health.status, 200);
    await health.arrayBuffer();
    // Settling one frees a place.
    const first = results.find((r) => r.reservation !== undefined)?.reservation?.id;
    const [s] = await send({ key: `${key}:0`, ...later, op: 'settle', reservation: first, cost: 0 });
    assert.equal(s?.settled, true);
    assert.ok((await send({ key, ...later, op: 'reserve', cost: 1 }))[0]?.reservation);
  });
});
