/**
 * `/v1/check` beyond a plain check (what `sluice/remote` uses), on a real `sluice serve`: op peek,
 * refund, reset, acquire, release; name; groups decided all or nothing; the caller's clock only with
 * --client-clock; and what a hostile caller sends (bad ops, oversized fields, mixed groups).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { postJson, type SluiceProcess, startSluice, unique } from './helpers.js';

type Result = Record<string, unknown> & { error?: { code: string; message: string } };

describe('/v1/check store operations', { timeout: 60_000 }, () => {
  let service: SluiceProcess;
  let url: string;
  before(async () => {
    service = await startSluice();
    url = `http://127.0.0.1:${service.http}/v1/check`;
  });
  after(() => service.stop());

  async function send(...checks: unknown[]): Promise<Result[]> {
    const res = await postJson(url, { checks });
    assert.equal(res.status, 200, res.text);
    return (res.json as { results: Result[] }).results;
  }
  const policy = { limit: 3, period: '1h' };

  it('peek looks without taking; refund gives back; reset forgets', async () => {
    const key = unique('ops');
    const [a] = await send({ key, ...policy });
    assert.equal(a?.remaining, 2);
    const [peek] = await send({ key, ...policy, op: 'peek' });
    assert.equal(peek?.remaining, 2);
    assert.deepEqual(await send({ key, ...policy, op: 'refund', cost: 1 }), [{ ok: true }]);
    assert.equal((await send({ key, ...policy, op: 'peek' }))[0]?.remaining, 3);
    await send({ key, ...policy, cost: 3 });
    assert.equal((await send({ key, ...policy }))[0]?.allowed, false);
    assert.deepEqual(await send({ key, ...policy, op: 'reset' }), [{ ok: true }]);
    assert.equal((await send({ key, ...policy }))[0]?.allowed, true);
  });

  it('name keeps counters apart; the same policy without a name shares them', async () => {
    const key = unique('named');
    await send({ key, ...policy, cost: 3 });
    assert.equal((await send({ key, ...policy }))[0]?.allowed, false);
    assert.equal((await send({ key, ...policy, name: 'api' }))[0]?.allowed, true);
    assert.equal((await send({ key, ...policy, name: 'other' }))[0]?.remaining, 2);
  });

  it('a group is decided all or nothing; one that does not fit takes nothing from the others', async () => {
    const key = unique('group');
    const small = { key, limit: 1, period: '1m', group: 1 };
    const big = { key, limit: 10, period: '1h', group: 1 };
    const first = await send(big, small);
    assert.deepEqual(
      first.map((r) => r.allowed),
      [true, true],
    );
    const second = await send(big, small);
    assert.deepEqual(
      second.map((r) => r.allowed),
      [true, false],
    );
    // The rejected group took nothing from the big limit: 9 left, not 8.
    assert.equal((await send({ key, limit: 10, period: '1h', op: 'peek' }))[0]?.remaining, 9);
    // Two groups and an ungrouped check in one request: each decided on its own.
    const mixed = await send({ ...big, group: 'a' }, { key: unique('g'), ...policy }, { ...big, group: 'b' });
    assert.deepEqual(
      mixed.map((r) => r.allowed),
      [true, true, true],
    );
  });

  it('an invalid member, or members with different ops, fail the whole group', async () => {
    const key = unique('bad-group');
    const r = await send({ key, ...policy, group: 7 }, { key, limit: -1, period: '1m', group: 7 });
    assert.equal(r[0]?.error?.code, 'ERR_SLUICE_GROUP_INVALID');
    assert.equal(r[1]?.error?.code, 'ERR_SLUICE_INVALID_LIMIT');
    const ops = await send({ key, ...policy, group: 8 }, { key, ...policy, group: 8, op: 'peek' });
    assert.deepEqual(
      ops.map((x) => x.error?.code),
      ['ERR_SLUICE_GROUP_INVALID', 'ERR_SLUICE_GROUP_INVALID'],
    );
    // Nothing was counted.
    assert.equal((await send({ key, ...policy, op: 'peek' }))[0]?.remaining, 3);
    const refundInGroup = await send({ key, ...policy, group: 9, op: 'refund' });
    assert.equal(refundInGroup[0]?.error?.code, 'ERR_SLUICE_INVALID_REQUEST');
  });

  it('acquire and release concurrency leases', async () => {
    const key = unique('lease');
    const [a] = await send({ key, op: 'acquire', limit: 1, leaseMs: 60_000 });
    assert.equal(a?.allowed, true);
    const lease = a?.lease as { id: string; expiresAt: number };
    assert.equal(typeof lease.id, 'string');
    assert.equal((await send({ key, op: 'acquire', limit: 1, leaseMs: 60_000 }))[0]?.allowed, false);
    assert.deepEqual(await send({ key, op: 'release', lease: lease.id }), [{ released: true }]);
    assert.deepEqual(await send({ key, op: 'release', lease: lease.id }), [{ released: false }]);
    assert.equal((await send({ key, op: 'acquire', limit: 1, leaseMs: 60_000 }))[0]?.allowed, true);
  });

  it("refuses the caller's clock unless started with --client-clock", async () => {
    const [r] = await send({ key: unique('clock'), ...policy, nowMs: 1_700_000_000_000 });
    assert.equal(r?.error?.code, 'ERR_SLUICE_CLIENT_CLOCK_DISABLED');
    assert.match(r?.error?.message ?? '', /--client-clock/);
  });

  it('what a hostile caller sends gets a coded error per check, and the others still decide', async () => {
    const key = unique('hostile');
    const r = await send(
      { key, ...policy, op: 'explode' },
      { key, ...policy, name: 'x'.repeat(10_000) },
      { key, ...policy, name: 'tab\there' },
      { key, ...policy, group: 'g'.repeat(1000) },
      { key, ...policy, group: { nested: true } },
      { key, op: 'acquire', limit: 1, leaseMs: 1e12 },
      { key, op: 'acquire', limit: 1, leaseMs: 1000, period: '1m' },
      { key, op: 'release', lease: 'z'.repeat(5000) },
      { key, op: 'release' },
      { key, ...policy },
    );
    assert.deepEqual(
      r.map((x) => x.error?.code ?? 'ok'),
      [
        'ERR_SLUICE_INVALID_REQUEST',
        'ERR_SLUICE_INVALID_REQUEST',
        'ERR_SLUICE_INVALID_REQUEST',
        'ERR_SLUICE_INVALID_REQUEST',
        'ERR_SLUICE_INVALID_REQUEST',
        'ERR_SLUICE_INVALID_REQUEST',
        'ERR_SLUICE_UNKNOWN_OPTION',
        'ERR_SLUICE_INVALID_REQUEST',
        'ERR_SLUICE_INVALID_REQUEST',
        'ok',
      ],
    );
    // A group of the most checks a request may hold: decided, bounded.
    const many = Array.from({ length: 1000 }, (_, i) => ({ key: `${key}:${i}`, ...policy, group: 'all' }));
    const all = await send(...many);
    assert.equal(all.length, 1000);
    assert.ok(all.every((x) => x.allowed === true));
  });
});

describe('/v1/check with --client-clock', { timeout: 60_000 }, () => {
  let service: SluiceProcess;
  before(async () => {
    service = await startSluice(['--client-clock']);
  });
  after(() => service.stop());

  it("decides at the caller's time", async () => {
    const url = `http://127.0.0.1:${service.http}/v1/check`;
    const key = unique('clock');
    const t0 = 1_700_000_040_000;
    const at = async (nowMs: number) =>
      ((await postJson(url, { checks: [{ key, limit: 1, period: 1000, nowMs }] })).json as { results: Result[] })
        .results[0];
    assert.equal((await at(t0))?.allowed, true);
    assert.equal((await at(t0 + 999))?.allowed, false);
    assert.equal((await at(t0 + 1000))?.allowed, true);
  });
});
