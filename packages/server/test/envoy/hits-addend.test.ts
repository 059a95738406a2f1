/**
 * envoy ratelimit's hits_addend cases (test/redis/fixed_cache_impl_test.go, TestRedis and TestNearLimit:
 * "hitsAddend greater than 1", per-descriptor hits_addend), reproduced against `sluice serve` in envoy mode
 * on both gRPC servers. Where envoy counts the hits of a rejected request, sluice counts none (a deliberate
 * difference: envoy's STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT=true behaviour), which the last case asserts.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { unique } from '../integration/helpers.js';
import { createRuntime, type EnvoyService, type Runtime, shape, startEnvoy, status } from './harness.js';

const RULES = `domain: hits
descriptors:
  - key: k20
    rate_limit: { unit: hour, requests_per_unit: 20 }
  - key: k8
    rate_limit: { unit: hour, requests_per_unit: 8 }
  - key: k10
    rate_limit: { unit: hour, requests_per_unit: 10 }
`;

describe(`envoy hits_addend cases`, () => {
  let runtime: Runtime;
  let svc: EnvoyService;
  before(async () => {
    runtime = createRuntime({ 'hits.yaml': RULES });
    svc = await startEnvoy(runtime.env);
  });
  after(async () => {
    assert.equal(await svc?.stop(), 0);
    runtime?.dispose();
  });
  const ask = (key: string, value: string, hits: number) => svc.ask('hits', [[[key, value]]], { hitsAddend: hits });

  it('a request hits_addend of 3 takes 3 (20 → 17)', async () => {
    assert.deepEqual(shape(await ask('k20', unique('a'), 3)).statuses, [status('OK', 20, 'HOUR', 17)]);
  });

  it('hits up to the limit exactly are OK; one more hit is OVER_LIMIT', async () => {
    const v = unique('b');
    assert.deepEqual(shape(await ask('k8', v, 5)).statuses, [status('OK', 8, 'HOUR', 3)]);
    assert.deepEqual(shape(await ask('k8', v, 3)).statuses, [status('OK', 8, 'HOUR', 0)]);
    assert.deepEqual(shape(await ask('k8', v, 1)).statuses, [status('OVER_LIMIT', 8, 'HOUR', 0)]);
  });

  it('0 counts as 1 (Envoy sends 0 when the field is unset)', async () => {
    assert.deepEqual(shape(await ask('k20', unique('z'), 0)).statuses, [status('OK', 20, 'HOUR', 19)]);
  });

  it('a descriptor’s own hits_addend wins over the request’s; 0 there looks without counting', async () => {
    const v = unique('d');
    const res = await svc.client.shouldRateLimit({
      domain: 'hits',
      hitsAddend: 1,
      descriptors: [
        { entries: [{ key: 'k20', value: v }], hitsAddend: { value: 4 } },
        { entries: [{ key: 'k10', value: v }], hitsAddend: { value: 0 } },
      ],
    });
    assert.deepEqual(shape(res).statuses, [status('OK', 20, 'HOUR', 16), status('OK', 10, 'HOUR', 10)]);
  });

  it('more hits than are left: OVER_LIMIT, and nothing is counted (deliberate difference)', async () => {
    const v = unique('e');
    assert.deepEqual(shape(await ask('k10', v, 7)).statuses, [status('OK', 10, 'HOUR', 3)]);
    // envoy would count the 7 (14 of 10) and say 0 left; sluice counts nothing for a rejected request, so
    // its status says what is really left: 3.
    assert.deepEqual(shape(await ask('k10', v, 7)).statuses, [status('OVER_LIMIT', 10, 'HOUR', 3)]);
    assert.deepEqual(shape(await ask('k10', v, 3)).statuses, [status('OK', 10, 'HOUR', 0)]);
  });
});
