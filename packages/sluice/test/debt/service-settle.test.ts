/**
 * Debt through the service (issue 40): a `/v1/check` settle whose actual cost is past the limit charges all of it,
 * and the key's next checks are refused until the debt is paid; op `charge` alone and in a group does the same.
 * A real `sluice serve` (memory store) on the caller's clock.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { postJson, type SluiceProcess, startSluice } from '../../../server/test/integration/helpers.js';

type Result = Record<string, unknown> & { reservation?: { id: string } };
const T0 = 1_900_000_000_000;

describe('debt through /v1/check', { timeout: 60_000 }, () => {
  let service: SluiceProcess;
  let url: string;
  before(async () => {
    service = await startSluice(['--client-clock']);
    url = `http://127.0.0.1:${service.http}/v1/check`;
  });
  after(() => service.stop());

  async function send(...checks: unknown[]): Promise<Result[]> {
    const res = await postJson(url, { checks });
    assert.equal(res.status, 200, res.text);
    return (res.json as { results: Result[] }).results;
  }
  // A token bucket of 1000 a minute: a token every 60 ms.
  const policy = { algorithm: 'token-bucket', limit: 1000, period: '1m' };

  it('a settle past the limit charges all of it; checks wait until the debt is paid', async () => {
    const key = `svc-debt-${process.pid}`;
    const [r] = await send({ key, ...policy, nowMs: T0, op: 'reserve', cost: 900 });
    const id = r?.reservation?.id;
    const [s] = await send({ key, ...policy, nowMs: T0, op: 'settle', reservation: id, cost: 1100 });
    assert.deepEqual(s, { settled: true, reserved: 900, charged: 1100, refunded: 0 });
    // 100 tokens owed: 6 s to pay, then one more token's 60 ms for a request of 1.
    const [refused] = await send({ key, ...policy, nowMs: T0 + 6_000, op: 'peek', cost: 1 });
    assert.equal(refused?.allowed, false);
    assert.equal(refused?.retryAfterMs, 60);
    const [passes] = await send({ key, ...policy, nowMs: T0 + 6_060, op: 'check', cost: 1 });
    assert.equal(passes?.allowed, true);
  });

  it('op charge, alone and as a group, takes the cost past the limit and says the key owes', async () => {
    const key = `svc-charge-${process.pid}`;
    const [alone] = await send({ key, ...policy, nowMs: T0, op: 'charge', cost: 1500 });
    assert.equal(alone?.allowed, false, 'in debt');
    assert.equal(alone?.retryAfterMs, 30_000, '500 tokens owed at 1000 a minute');
    const [a, b] = await send(
      { key: `${key}-a`, ...policy, nowMs: T0, op: 'charge', cost: 10, group: 1 },
      { key: `${key}-b`, ...policy, nowMs: T0, op: 'charge', cost: 1010, group: 1 },
    );
    assert.equal(a?.allowed, true);
    assert.equal(a?.remaining, 990);
    assert.equal(b?.allowed, false);
    for (const cost of [-1, 1.5, 'lots', 1e308]) {
      const [bad] = await send({ key, ...policy, nowMs: T0, op: 'charge', cost });
      assert.match(String((bad?.error as { code?: string } | undefined)?.code), /^ERR_SLUICE_/, String(cost));
    }
  });
});
