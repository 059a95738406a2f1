/**
 * The Envoy RLS v3 gRPC API end to end: the real CLI as a child process, asked by a real gRPC client
 * (@grpc/grpc-js with the shipped .proto loaded by @grpc/proto-loader, independent of the service's own
 * hand-written codec). The behaviours are envoy ratelimit's, observed on the wire.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { status } from '@grpc/grpc-js';
import { createRlsClient, type RlsClient, type RlsResponse } from '../../src/index.js';
import { ROOT, type SluiceProcess, startSluice, unique } from './helpers.js';

const CONFIG = join(ROOT, 'test', 'integration', 'fixtures', 'envoy.yaml');

type Entries = [string, string][];
const descriptor = (entries: Entries, extra: Record<string, unknown> = {}) => ({
  entries: entries.map(([key, value]) => ({ key, value })),
  ...extra,
});

describe(`gRPC ShouldRateLimit`, () => {
  let sluice: SluiceProcess;
  let client: RlsClient;
  const ask = (
    descriptors: ReturnType<typeof descriptor>[],
    extra: Record<string, unknown> = {},
  ): Promise<RlsResponse> => client.shouldRateLimit({ domain: 'it', descriptors, ...extra }, 5000);

  before(async () => {
    sluice = await startSluice(['--config', CONFIG]);
    client = createRlsClient(`127.0.0.1:${sluice.grpc}`);
  });
  after(async () => {
    client?.close();
    const exit = await sluice?.stop();
    assert.equal(exit?.code, 0);
  });

  it('counts a 20/day key down to 0, then answers OVER_LIMIT with the limit, remaining and reset', async () => {
    const key = unique('k');
    for (let i = 19; i >= 0; i--) {
      const res = await ask([descriptor([['per_day', key]])]);
      assert.equal(res.overallCode, 'OK');
      const s = res.statuses?.[0];
      assert.equal(s?.code, 'OK');
      assert.deepEqual(s?.currentLimit, { name: 'twenty', requestsPerUnit: 20, unit: 'DAY' });
      assert.equal(s?.limitRemaining ?? 0, i);
      const reset = Number(s?.durationUntilReset?.seconds ?? 0);
      assert.ok(reset > 0 && reset <= 86_400, `duration_until_reset ${reset}s within the day`);
    }
    const over = await ask([descriptor([['per_day', key]])]);
    assert.equal(over.overallCode, 'OVER_LIMIT');
    assert.equal(over.statuses?.[0]?.code, 'OVER_LIMIT');
    assert.equal(over.statuses?.[0]?.limitRemaining ?? 0, 0);
    const headers = Object.fromEntries((over.responseHeadersToAdd ?? []).map((h) => [h.key.toLowerCase(), h.value]));
    assert.equal(headers['x-ratelimit-limit'], '20');
    assert.equal(headers['x-ratelimit-remaining'], '0');
    assert.match(headers['ratelimit-policy'] ?? '', /^"twenty";q=20;w=86400$/);
    assert.match(headers.ratelimit ?? '', /^"twenty";r=0;t=\d+$/);
    assert.match(headers['retry-after'] ?? '', /^\d+$/);
  });

  it('reports the unit of a per-minute limit and its reset within the minute', async () => {
    const res = await ask([descriptor([['per_minute', unique('m')]])]);
    assert.deepEqual(res.statuses?.[0]?.currentLimit, { name: 'per-minute', requestsPerUnit: 60, unit: 'MINUTE' });
    assert.equal(res.statuses?.[0]?.limitRemaining, 59);
    const d = res.statuses?.[0]?.durationUntilReset;
    const ms = Number(d?.seconds ?? 0) * 1000 + Number(d?.nanos ?? 0) / 1e6;
    assert.ok(ms > 0 && ms <= 60_000, `reset ${ms} ms`);
  });

  it('an unknown domain limits nothing', async () => {
    const res = await client.shouldRateLimit({ domain: unique('nowhere'), descriptors: [descriptor([['a', 'b']])] });
    assert.equal(res.overallCode, 'OK');
    assert.equal(res.statuses?.[0]?.code, 'OK');
    assert.equal(res.statuses?.[0]?.currentLimit ?? undefined, undefined);
  });

  it('two descriptors: the overall code is the worst, and the rejected request counts on neither', async () => {
    const a = unique('a');
    const b = unique('b');
    assert.equal((await ask([descriptor([['specific', b]])])).overallCode, 'OK'); // b: 1/day, now used up
    const res = await ask([descriptor([['per_day', a]]), descriptor([['specific', b]])]);
    assert.equal(res.overallCode, 'OVER_LIMIT');
    assert.deepEqual(
      res.statuses?.map((s) => s.code),
      ['OK', 'OVER_LIMIT'],
    );
    // a was not counted by the rejected request: 19 left after one more.
    assert.equal((await ask([descriptor([['per_day', a]])])).statuses?.[0]?.limitRemaining, 19);
  });

  it('the most specific rule wins, and the depth must match', async () => {
    const vip = await ask([descriptor([['specific', 'vip']])]);
    assert.equal(vip.statuses?.[0]?.currentLimit?.requestsPerUnit, 1000);
    const outer = unique('n');
    assert.equal((await ask([descriptor([['nested', outer]])])).statuses?.[0]?.currentLimit?.requestsPerUnit, 10);
    assert.equal(
      (
        await ask([
          descriptor([
            ['nested', outer],
            ['sub', 'x'],
          ]),
        ])
      ).statuses?.[0]?.currentLimit?.requestsPerUnit,
      2,
    );
    const deeper = await ask([
      descriptor([
        ['nested', outer],
        ['sub', 'x'],
        ['extra', 'y'],
      ]),
    ]);
    assert.equal(deeper.statuses?.[0]?.currentLimit ?? undefined, undefined);
  });

  it('unlimited, allow-listed and zero limits', async () => {
    const unlimited = await ask([descriptor([['unlimited', unique('u')]])]);
    assert.equal(unlimited.statuses?.[0]?.code, 'OK');
    assert.equal(unlimited.statuses?.[0]?.limitRemaining, 4294967295);
    for (let i = 0; i < 3; i++) {
      const friend = await ask([descriptor([['friend', 'alice']])]);
      assert.equal(friend.statuses?.[0]?.code, 'OK');
      assert.equal(friend.statuses?.[0]?.currentLimit ?? undefined, undefined);
    }
    const blocked = await ask([descriptor([['blocked', unique('z')]])]);
    assert.equal(blocked.overallCode, 'OVER_LIMIT');
  });

  it('shadow mode answers OK while counting over the limit', async () => {
    const key = unique('s');
    assert.equal((await ask([descriptor([['shadowed', key]])])).overallCode, 'OK');
    const second = await ask([descriptor([['shadowed', key]])]);
    assert.equal(second.overallCode, 'OK');
    assert.equal(second.statuses?.[0]?.code, 'OK');
  });

  it('wildcards match in the middle of a value', async () => {
    const first = await ask([descriptor([['wild', 'api-42-v1']])]);
    assert.equal(first.statuses?.[0]?.currentLimit?.requestsPerUnit, 1);
    const none = await ask([descriptor([['wild', 'xapi-v2']])]);
    assert.equal(none.statuses?.[0]?.currentLimit ?? undefined, undefined);
  });

  it('a replaced limit is not enforced when its replacement matches the same request', async () => {
    const k = unique('r');
    for (let i = 0; i < 3; i++) {
      const res = await ask([descriptor([['small', k]]), descriptor([['big', k]])]);
      assert.equal(res.overallCode, 'OK', `request ${i}`);
      assert.equal(res.statuses?.[1]?.currentLimit?.name, 'big');
    }
  });

  it('several limits on one descriptor: all must pass', async () => {
    const k = unique('t');
    for (let i = 0; i < 3; i++) assert.equal((await ask([descriptor([['two', k]])])).overallCode, 'OK');
    const over = await ask([descriptor([['two', k]])]);
    assert.equal(over.overallCode, 'OVER_LIMIT');
    assert.equal(over.statuses?.[0]?.currentLimit?.name, 'per-day');
  });

  it('hits_addend: per descriptor (0 looks without counting) and per request', async () => {
    const k = unique('h');
    const look = await ask([descriptor([['per_day', k]], { hitsAddend: { value: 0 } })]);
    assert.equal(look.statuses?.[0]?.limitRemaining, 20);
    const five = await ask([descriptor([['per_day', k]])], { hitsAddend: 5 });
    assert.equal(five.statuses?.[0]?.limitRemaining, 15);
    const three = await ask([descriptor([['per_day', k]], { hitsAddend: { value: 3 } })]);
    assert.equal(three.statuses?.[0]?.limitRemaining, 12);
  });

  it('a request limit override replaces the configured limit', async () => {
    const k = unique('o');
    const res = await ask([descriptor([['per_day', k]], { limit: { requestsPerUnit: 2, unit: 'HOUR' } })]);
    assert.equal(res.statuses?.[0]?.currentLimit?.requestsPerUnit, 2);
    assert.equal(res.statuses?.[0]?.currentLimit?.unit, 'HOUR');
    assert.equal(res.statuses?.[0]?.limitRemaining, 1);
  });

  it('answers INVALID_ARGUMENT with envoy ratelimit messages', async () => {
    await assert.rejects(client.shouldRateLimit({ domain: '', descriptors: [descriptor([['a', 'b']])] }), {
      code: status.INVALID_ARGUMENT,
      details: 'rate limit domain must not be empty',
    });
    await assert.rejects(client.shouldRateLimit({ domain: 'it', descriptors: [] }), {
      code: status.INVALID_ARGUMENT,
      details: 'rate limit descriptor list must not be empty',
    });
    await assert.rejects(client.shouldRateLimit({ domain: 'it', descriptors: [descriptor([['', 'x']])] }), {
      code: status.INVALID_ARGUMENT,
    });
    await assert.rejects(
      client.shouldRateLimit({
        domain: 'it',
        descriptors: [descriptor([['a', 'b']], { limit: { requestsPerUnit: 1, unit: 'UNKNOWN' } })],
      }),
      { code: status.INVALID_ARGUMENT },
    );
    // Still serving.
    assert.equal((await ask([descriptor([['per_minute', unique('x')]])])).overallCode, 'OK');
  });
});
