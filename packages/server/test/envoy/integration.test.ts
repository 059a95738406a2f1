/**
 * envoy ratelimit's integration test (test/integration/integration_test.go: testBasicBaseConfig,
 * testConfigReload, testShareThreshold), reproduced against `sluice serve` started from a RUNTIME_ROOT
 * tree, on both gRPC servers. Where envoy runs its cases over several Redis layouts, the memory store
 * stands in (the Redis store makes the same decisions: packages/sluice/test/redis/differential.test.ts).
 */
import assert from 'node:assert/strict';
import { copyFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { unique } from '../integration/helpers.js';
import {
  createRuntime,
  type EnvoyService,
  FIXTURES,
  NO_LIMIT,
  overHourLimitOfTwo,
  overMinuteLimit,
  type Runtime,
  resetMs,
  shape,
  startEnvoy,
  status,
  withinOneWindow,
} from './harness.js';

describe(`envoy ratelimit integration cases`, () => {
  let runtime: Runtime;
  let svc: EnvoyService;
  before(async () => {
    runtime = createRuntime({}, [join(FIXTURES, 'runtime')]);
    // Started without --envoy-compat: RUNTIME_ROOT alone says "started the envoy way".
    svc = await startEnvoy(runtime.env, []);
  });
  after(async () => {
    assert.equal(await svc?.stop(), 0);
    runtime?.dispose();
  });

  it('basic: an unknown domain answers OK with no limit', async () => {
    assert.deepEqual(shape(await svc.ask('foo', [[['hello', 'world']]])), {
      overallCode: 'OK',
      statuses: [NO_LIMIT],
    });
  });

  it('basic: key1 gets 50 per second', async () => {
    assert.deepEqual(shape(await svc.ask('basic', [[['key1', unique('foo')]]])), {
      overallCode: 'OK',
      statuses: [status('OK', 50, 'SECOND', 49)],
    });
  });

  it('basic: 25 requests against 20 per minute: OK down to 0, then OVER_LIMIT', async () => {
    await withinOneWindow((key) => overMinuteLimit(svc, key));
  });

  it('basic: two descriptors in one request (20/minute and 10/hour)', async () => {
    await withinOneWindow((key) => overHourLimitOfTwo(svc, key));
  });

  it('basic: duration_until_reset counts down within a window (in ms: a deliberate difference)', async () => {
    const key = unique('dur');
    const first = resetMs(await svc.ask('another', [[['key4', key]]]));
    const second = resetMs(await svc.ask('another', [[['key4', key]]]));
    assert.ok(first > 0 && first <= 86_400_000);
    assert.ok(second <= first);
    // envoy reports whole seconds; sluice reports milliseconds (nanos carry them).
    assert.ok(Number.isInteger(first));
  });

  it('share_threshold: every files/* value shares one threshold', async () => {
    // The shared counter is global to the process: use up whatever is left, then expect OVER_LIMIT.
    for (let i = 0; i < 10; i++) {
      const res = await svc.ask('share-threshold-test', [[['files', 'files/a.pdf']]]);
      assert.ok(res.overallCode === 'OK' || res.overallCode === 'OVER_LIMIT');
    }
    assert.deepEqual(shape(await svc.ask('share-threshold-test', [[['files', 'files/b.csv']]])), {
      overallCode: 'OVER_LIMIT',
      statuses: [status('OVER_LIMIT', 10, 'HOUR', 0)],
    });
  });

  it('share_threshold: without it, each value matching the wildcard has its own', async () => {
    for (let i = 0; i < 10; i++) {
      assert.deepEqual(
        shape(await svc.ask('share-threshold-test', [[['files_no_share', `files_no_share/${unique('f')}`]]])),
        {
          overallCode: 'OK',
          statuses: [status('OK', 10, 'HOUR', 9)],
        },
      );
    }
  });

  it('reload: a file added to the config directory is loaded; removing it reloads too', async () => {
    assert.deepEqual(shape(await svc.ask('reload', [[['block', 'foo']]])), {
      overallCode: 'OK',
      statuses: [NO_LIMIT],
    });
    const loaded = () =>
      svc.sluice.waitForLog((r) => r.msg === 'config loaded' && JSON.stringify(r.domains).includes('"reload"'));
    const before = svc.sluice.stdout.length;
    copyFileSync(join(FIXTURES, 'reload.yaml'), join(runtime.configDir, 'reload.yaml'));
    await loaded();
    assert.deepEqual(shape(await svc.ask('reload', [[['key1', unique('foo')]]])), {
      overallCode: 'OK',
      statuses: [status('OK', 50, 'SECOND', 49)],
    });
    assert.equal((await svc.ask('reload', [[['block', 'foo']]])).overallCode, 'OVER_LIMIT');
    runtime.remove('reload.yaml');
    await svc.sluice.waitForLog(
      (r) =>
        r.msg === 'config loaded' &&
        !JSON.stringify(r.domains).includes('"reload"') &&
        svc.sluice.stdout.length > before,
    );
    assert.deepEqual(shape(await svc.ask('reload', [[['block', 'foo']]])), {
      overallCode: 'OK',
      statuses: [NO_LIMIT],
    });
  });
});
