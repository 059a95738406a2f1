/**
 * envoy ratelimit's stats settings against the real `sluice serve` in envoy mode: NEAR_LIMIT_RATIO (the
 * near-limit threshold of envoy's cache tests, floor(limit × ratio)), EXTRA_TAGS (constant labels on every
 * series), DISABLE_STATS, and the per-value series cap of detailed_metric rules as a flag. Stats do not
 * depend on the gRPC server; both are run all the same, as the rest of the suite is.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createRuntime, startEnvoy } from './harness.js';

const RULES = {
  'api.yaml': `domain: api
descriptors:
  - key: k
    rate_limit: { unit: hour, requests_per_unit: 4 }
  - key: user
    detailed_metric: true
    rate_limit: { unit: hour, requests_per_unit: 10 }
`,
};

const metricsOf = (port: number) => fetch(`http://127.0.0.1:${port}/metrics`).then((r) => r.text());

/** The value of the sample whose line starts with `prefix` and contains every `parts`. */
function sample(text: string, name: string, parts: string[]): number {
  const line = text.split('\n').find((l) => l.startsWith(`${name}{`) && parts.every((p) => l.includes(p)));
  return line === undefined ? 0 : Number(line.slice(line.lastIndexOf(' ') + 1));
}

describe(`envoy stats settings`, () => {
  it('NEAR_LIMIT_RATIO=0.5 and EXTRA_TAGS: near_limit past floor(4 × 0.5) = 2 used; env="prod" on every series', async () => {
    const runtime = createRuntime(RULES);
    const svc = await startEnvoy({
      ...runtime.env,
      NEAR_LIMIT_RATIO: '0.5',
      EXTRA_TAGS: 'env:prod,zone:eu-1',
    });
    try {
      const codes: string[] = [];
      for (let i = 0; i < 5; i++) codes.push((await svc.ask('api', [[['k', 'v']]])).overallCode ?? '');
      assert.deepEqual(codes, ['OK', 'OK', 'OK', 'OK', 'OVER_LIMIT']);
      const text = await metricsOf(svc.sluice.http);
      const decisions = (outcome: string) =>
        sample(text, 'sluice_decisions_total', ['domain="api"', `outcome="${outcome}"`]);
      assert.equal(decisions('ok'), 2);
      assert.equal(decisions('near_limit'), 2);
      assert.equal(decisions('over_limit'), 1);
      const series = text.split('\n').filter((l) => l.startsWith('sluice_'));
      assert.ok(series.length > 20);
      for (const line of series) assert.match(line, /env="prod",?.*zone="eu-1"|zone="eu-1".*env="prod"/, line);
    } finally {
      assert.equal(await svc.stop(), 0);
      runtime.dispose();
    }
  });

  it('EXTRA_TAGS naming a label sluice uses stops the start, naming it', async () => {
    const runtime = createRuntime(RULES);
    try {
      await assert.rejects(startEnvoy({ ...runtime.env, EXTRA_TAGS: 'domain:x' }), /'domain' is already a label/);
      await assert.rejects(startEnvoy({ ...runtime.env, EXTRA_TAGS: 'bad-name:x' }), /not a Prometheus label name/);
    } finally {
      runtime.dispose();
    }
  });

  it('DISABLE_STATS: decisions as before, /metrics empty', async () => {
    const runtime = createRuntime(RULES);
    const svc = await startEnvoy({ ...runtime.env, DISABLE_STATS: 'true' });
    try {
      assert.equal((await svc.ask('api', [[['k', 'v']]])).overallCode, 'OK');
      const res = await fetch(`http://127.0.0.1:${svc.sluice.http}/metrics`);
      assert.equal(res.status, 200);
      assert.equal(await res.text(), '');
    } finally {
      assert.equal(await svc.stop(), 0);
      runtime.dispose();
    }
  });

  it('--max-descriptor-series 2: a third detailed_metric value counts under _overflow_', async () => {
    const runtime = createRuntime(RULES);
    const svc = await startEnvoy(runtime.env, ['--envoy-compat', '--max-descriptor-series', '2']);
    try {
      for (const user of ['a', 'b', 'c', 'c']) await svc.ask('api', [[['user', user]]]);
      const text = await metricsOf(svc.sluice.http);
      const series = (descriptor: string) =>
        sample(text, 'sluice_descriptor_decisions_total', [`descriptor="${descriptor}"`, 'outcome="ok"']);
      assert.equal(series('user_a'), 1);
      assert.equal(series('user_b'), 1);
      assert.equal(series('user_c'), 0);
      assert.equal(series('_overflow_'), 2);
    } finally {
      assert.equal(await svc.stop(), 0);
      runtime.dispose();
    }
  });
});
