/**
 * envoy ratelimit's config tests (test/config/config_test.go) and its README examples 1–11, reproduced
 * against `sluice serve` in envoy mode on both gRPC servers: every example loads and behaves as the
 * README says, the stats keys of detailed_metric / value_to_metric / share_threshold rules appear as
 * per-value series, every invalid config envoy refuses is refused on reload (keeping the last good
 * rules), and MERGE_DOMAIN_CONFIG merges files of one domain.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { postJson, unique } from '../integration/helpers.js';
import {
  createRuntime,
  type EnvoyService,
  FIXTURES,
  NO_LIMIT,
  type Runtime,
  shape,
  startEnvoy,
  status,
} from './harness.js';

const TOKEN = 'envoy-conformance-admin-token';

/** The per-value series of `domain`, as `descriptor -> count` (outcomes summed). */
async function descriptorSeries(svc: EnvoyService, domain: string): Promise<Record<string, number>> {
  const text = await (await fetch(`http://127.0.0.1:${svc.sluice.http}/metrics`)).text();
  const out: Record<string, number> = {};
  const line = /^sluice_descriptor_decisions_total\{([^}]*)\} (\d+)$/gm;
  for (const m of text.matchAll(line)) {
    const labels = Object.fromEntries([...(m[1] as string).matchAll(/(\w+)="([^"]*)"/g)].map((l) => [l[1], l[2]]));
    if (labels.domain !== domain) continue;
    out[labels.descriptor as string] = (out[labels.descriptor as string] ?? 0) + Number(m[2]);
  }
  return out;
}

/** POST /admin/reload: the config source's answer (ok, issues). */
async function reload(svc: EnvoyService): Promise<{ ok: boolean; issues?: { code: string; file: string }[] }> {
  const res = await postJson(
    `http://127.0.0.1:${svc.sluice.http}/admin/reload`,
    {},
    { authorization: `Bearer ${TOKEN}` },
  );
  return res.json as never;
}

const INVALID: Record<string, string> = {
  'empty_domain.yaml': 'ERR_SLUICE_RULES_EMPTY_DOMAIN',
  'empty_key.yaml': 'ERR_SLUICE_RULES_EMPTY_KEY',
  'duplicate_key.yaml': 'ERR_SLUICE_RULES_DUPLICATE_DESCRIPTOR',
  'bad_limit_unit.yaml': 'ERR_SLUICE_RULES_UNKNOWN_UNIT',
  'replaces_self.yaml': 'ERR_SLUICE_RULES_REPLACES_SELF',
  'replaces_empty.yaml': 'ERR_SLUICE_RULES_REPLACES_EMPTY',
  'bad_yaml.yaml': 'ERR_SLUICE_RULES_BAD_YAML',
  'misspelled_key.yaml': 'ERR_SLUICE_RULES_UNKNOWN_FIELD',
  'misspelled_key2.yaml': 'ERR_SLUICE_RULES_UNKNOWN_FIELD',
  'non_string_key.yaml': 'ERR_SLUICE_RULES_UNKNOWN_FIELD',
  'non_map_list.yaml': 'ERR_SLUICE_RULES_WRONG_TYPE',
  'unlimited_with_unit.yaml': 'ERR_SLUICE_RULES_UNIT_WITH_UNLIMITED',
  'share_threshold_without_wildcard.yaml': 'ERR_SLUICE_RULES_SHARE_THRESHOLD_WITHOUT_WILDCARD',
};

describe(`envoy README examples and config cases`, () => {
  let runtime: Runtime;
  let svc: EnvoyService;
  before(async () => {
    runtime = createRuntime({}, [join(FIXTURES, 'readme')]);
    svc = await startEnvoy({ ...runtime.env, SLUICE_ADMIN_TOKEN: TOKEN });
  });
  after(async () => {
    assert.equal(await svc?.stop(), 0);
    runtime?.dispose();
  });

  it('example 1: two values of one key, 500 per second each', async () => {
    assert.deepEqual(shape(await svc.ask('mongo_cps', [[['database', 'users']]])).statuses, [
      status('OK', 500, 'SECOND', 499),
    ]);
  });

  it('example 2: nested marketing limit and the per-number limit, each on its own descriptor', async () => {
    const n = unique('206');
    assert.deepEqual(
      shape(
        await svc.ask('messaging', [
          [
            ['message_type', 'marketing'],
            ['to_number', n],
          ],
          [['to_number', n]],
        ]),
      ),
      { overallCode: 'OK', statuses: [status('OK', 5, 'DAY', 4), status('OK', 100, 'DAY', 99)] },
    );
  });

  it('example 3: a key/value beats the bare key (a blocked address)', async () => {
    assert.equal((await svc.ask('edge_proxy_per_ip', [[['remote_address', '50.0.0.5']]])).overallCode, 'OVER_LIMIT');
    assert.deepEqual(shape(await svc.ask('edge_proxy_per_ip', [[['remote_address', unique('50.0.0.1')]]])).statuses, [
      status('OK', 10, 'SECOND', 9),
    ]);
  });

  it('example 4: the depth of the request must match the config', async () => {
    assert.deepEqual(shape(await svc.ask('example4', [[['key', 'value']]])).statuses, [NO_LIMIT]);
    const deeper = [
      ['key', 'value'],
      ['subkey', unique('s')],
    ] as [string, string][];
    assert.deepEqual(shape(await svc.ask('example4', [deeper])).statuses, [status('OK', 300, 'SECOND', 299)]);
  });

  it('example 5: unlimited answers OK with uint32 max remaining', async () => {
    const res = await svc.ask('internal', [[['ldap', 'x']], [['azure', unique('a')]]]);
    assert.equal(res.statuses?.[0]?.limitRemaining, 4294967295);
    assert.deepEqual(shape(res), {
      overallCode: 'OK',
      statuses: [{ code: 'OK', currentLimit: null, limitRemaining: 4294967295 }, status('OK', 100, 'MINUTE', 99)],
    });
  });

  it('example 6: user-a is in shadow mode, user-b is limited', async () => {
    const s = unique('svc');
    const a = [
      ['service', s],
      ['user', 'user-a'],
    ] as [string, string][];
    const b = [
      ['service', s],
      ['user', 'user-b'],
    ] as [string, string][];
    const res = await svc.ask('example6', [a, b]);
    assert.deepEqual(shape(res), {
      overallCode: 'OK',
      statuses: [status('OK', 10, 'SECOND', 9), status('OK', 20, 'SECOND', 19)],
    });
  });

  it('example 7: replaces drops the replaced limit for that request only', async () => {
    const one = [
      ['key_1', 'value_1'],
      ['user', 'bkthomps'],
    ] as [string, string][];
    const two = [
      ['key_2', 'value_2'],
      ['user', 'bkthomps'],
    ] as [string, string][];
    const both = shape(await svc.ask('example7', [one, two]));
    assert.deepEqual(both.statuses[0], NO_LIMIT);
    assert.deepEqual((both.statuses[1] as { currentLimit: unknown }).currentLimit, {
      requestsPerUnit: 10,
      unit: 'SECOND',
    });
    const alone = shape(await svc.ask('example7', [one]));
    assert.deepEqual(alone.statuses[0]?.currentLimit, { requestsPerUnit: 5, unit: 'SECOND' });
  });

  it('example 8: detailed_metric gives a series per unspecified value; a listed value keeps its own', async () => {
    await svc.ask('example8', [[['key1', 'unspecified_value']]]);
    await svc.ask('example8', [[['key1', 'unspecified_value2']]]);
    await svc.ask('example8', [[['key1', 'value1']]]);
    const series = await descriptorSeries(svc, 'example8');
    assert.equal(series.key1_unspecified_value, 1);
    assert.equal(series.key1_unspecified_value2, 1);
    // key1=value1 matched a rule without detailed_metric: it is in the per-rule series only.
    assert.equal(series.key1_value1, undefined);
  });

  it('example 9: trailing, middle and multiple wildcards', async () => {
    const limited = async (key: string, value: string) =>
      shape(await svc.ask('example9', [[[key, value]]])).statuses[0]?.currentLimit;
    assert.deepEqual(await limited('key1', 'valueXYZ'), { requestsPerUnit: 20, unit: 'MINUTE' });
    assert.deepEqual(await limited('path', '/api/123/action'), { requestsPerUnit: 20, unit: 'MINUTE' });
    assert.equal(await limited('path', '/api/123/other'), null);
    assert.deepEqual(await limited('route', '/api/v1/resource/123/action'), { requestsPerUnit: 20, unit: 'MINUTE' });
  });

  it('example 10: value_to_metric puts runtime values into the stats key', async () => {
    const ask = (route: string, method: string) =>
      svc.ask('example10', [
        [
          ['route', route],
          ['http_method', method],
          ['subject_id', '123'],
        ],
      ]);
    await ask('api', 'GET');
    await ask('web', 'POST');
    const series = await descriptorSeries(svc, 'example10');
    assert.equal(series['route_api.http_method_GET.subject_id'], 1);
    assert.equal(series['route_web.http_method_POST.subject_id'], 1);
    await svc.ask('example10_wildcard', [
      [
        ['user', 'alice'],
        ['action', 'readfile'],
        ['resource', 'documents'],
      ],
    ]);
    assert.equal((await descriptorSeries(svc, 'example10_wildcard'))['user_alice.action_readfile.resource'], 1);
  });

  it('example 11: shared and isolated wildcard thresholds; the stats key shows the shared pattern', async () => {
    for (let i = 0; i < 5; i++) await svc.ask('example11', [[['files', 'files/a.pdf']]]);
    for (let i = 0; i < 5; i++) await svc.ask('example11', [[['files', 'files/b.csv']]]);
    assert.equal((await svc.ask('example11', [[['files', 'files/c.txt']]])).overallCode, 'OVER_LIMIT');
    const own = `files_no_share/${unique('f')}`;
    for (let i = 0; i < 10; i++) await svc.ask('example11', [[['files_no_share', own]]]);
    assert.equal((await svc.ask('example11', [[['files_no_share', own]]])).overallCode, 'OVER_LIMIT');
    assert.equal(
      (await svc.ask('example11', [[['files_no_share', `files_no_share/${unique('g')}`]]])).overallCode,
      'OK',
    );
    await svc.ask('example11_metrics', [
      [
        ['route', 'api/v1'],
        ['method', 'GET'],
      ],
    ]);
    // envoy's code (config_test.go) keeps the wildcard pattern, `*` included, for a shared threshold.
    assert.equal((await descriptorSeries(svc, 'example11_metrics'))['route_api/*.method'], 1);
  });

  it('envoy’s own example config (quota_mode, metadata, replaces, shadow, detailed) loads and decides', async () => {
    const res = await svc.ask('rl-example', [[['service', 'service_1']], [['service', 'service_2']]]);
    assert.equal(res.overallCode, 'OK');
    assert.equal(
      (await svc.ask('metadata-domain', [[['key2', unique('m')]]])).statuses?.[0]?.currentLimit?.unit,
      'MINUTE',
    );
  });

  it('every config envoy refuses is refused on reload, with its code; the last good rules stay', async () => {
    for (const [name, code] of Object.entries(INVALID)) {
      runtime.write(name, readFileSync(join(FIXTURES, 'invalid', name), 'utf8'));
      const result = await reload(svc);
      runtime.remove(name);
      assert.equal(result.ok, false, name);
      assert.ok(
        result.issues?.some((i) => i.code === code),
        `${name}: expected ${code}, got ${JSON.stringify(result.issues)}`,
      );
      assert.equal((await svc.ask('edge_proxy_per_ip', [[['remote_address', '50.0.0.5']]])).overallCode, 'OVER_LIMIT');
    }
    assert.equal((await reload(svc)).ok, true);
  });

  it('two files of one domain are refused without MERGE_DOMAIN_CONFIG', async () => {
    for (const name of readdirSync(join(FIXTURES, 'merge'))) {
      runtime.write(`merge-${name}`, readFileSync(join(FIXTURES, 'merge', name), 'utf8'));
    }
    const result = await reload(svc);
    for (const name of readdirSync(join(FIXTURES, 'merge'))) runtime.remove(`merge-${name}`);
    assert.equal(result.ok, false);
    assert.ok(result.issues?.some((i) => i.code === 'ERR_SLUICE_RULES_DUPLICATE_DOMAIN'));
    assert.equal((await reload(svc)).ok, true);
  });
});

describe(`MERGE_DOMAIN_CONFIG=true`, () => {
  let runtime: Runtime;
  let svc: EnvoyService;
  before(async () => {
    runtime = createRuntime({}, [join(FIXTURES, 'merge')]);
    svc = await startEnvoy({ ...runtime.env, MERGE_DOMAIN_CONFIG: 'true', SLUICE_ADMIN_TOKEN: TOKEN });
  });
  after(async () => {
    assert.equal(await svc?.stop(), 0);
    runtime?.dispose();
  });

  it('the descriptors of both files of the domain apply', async () => {
    assert.deepEqual(shape(await svc.ask('test-domain', [[['key1', 'value1']], [['key2', 'value2']]])), {
      overallCode: 'OK',
      statuses: [status('OK', 10, 'MINUTE', 9), status('OK', 20, 'MINUTE', 19)],
    });
  });

  it('a top-level key/value defined in two of the files is a duplicate', async () => {
    runtime.write('zz-again.yaml', readFileSync(join(FIXTURES, 'merge', 'key1.yaml'), 'utf8'));
    const result = await reload(svc);
    runtime.remove('zz-again.yaml');
    assert.equal(result.ok, false);
    assert.ok(result.issues?.some((i) => i.code === 'ERR_SLUICE_RULES_DUPLICATE_DESCRIPTOR'));
  });
});
