/**
 * envoy ratelimit's service tests (test/service/ratelimit_test.go) and health tests
 * (test/server/health_test.go), reproduced against `sluice serve` in envoy mode on both gRPC servers:
 * shadow modes, response headers, quota mode, dynamic metadata, malformed requests, unlimited rules and
 * the gRPC health service. Each group runs one service with the envoy settings its cases need.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import {
  credentials,
  status as grpcStatus,
  loadPackageDefinition,
  makeGenericClientConstructor,
  type ServiceError,
} from '@grpc/grpc-js';
import { loadSync } from '@grpc/proto-loader';
import { PROTO_DIR } from '../../src/support/proto.js';
import { postJson } from '../integration/helpers.js';
import {
  createRuntime,
  type EnvoyService,
  FIXTURES,
  headersOf,
  NO_LIMIT,
  type Runtime,
  shape,
  startEnvoy,
  status,
} from './harness.js';

const SERVICE = join(FIXTURES, 'service');

/** One service per env for the cases below. */
function group(
  name: string,
  env: Record<string, string>,
  files: Record<string, string>,
  body: (svc: () => EnvoyService, runtime: () => Runtime) => void,
) {
  describe(`${name}`, () => {
    let runtime: Runtime;
    let svc: EnvoyService;
    before(async () => {
      runtime = createRuntime(files, Object.keys(files).length === 0 ? [SERVICE] : []);
      svc = await startEnvoy({ ...runtime.env, ...env });
    });
    after(async () => {
      assert.equal(await svc?.stop(), 0);
      runtime?.dispose();
    });
    body(
      () => svc,
      () => runtime,
    );
  });
}

/** Calls grpc.health.v1.Health/Check with a client built from the shipped health.proto. */
function healthCheck(port: number, service: string): Promise<string> {
  const definition = loadPackageDefinition(
    loadSync('grpc/health/v1/health.proto', { includeDirs: [PROTO_DIR], enums: String, defaults: true }),
  ) as unknown as { grpc: { health: { v1: { Health: { service: never } } } } };
  const Client = makeGenericClientConstructor(definition.grpc.health.v1.Health.service, 'Health');
  const client = new Client(`127.0.0.1:${port}`, credentials.createInsecure()) as unknown as {
    Check(req: unknown, cb: (e: ServiceError | null, r: { status: string }) => void): void;
    close(): void;
  };
  return new Promise((resolve, reject) =>
    client.Check({ service }, (error, res) => {
      client.close();
      if (error) reject(error);
      else resolve(res.status);
    }),
  );
}

group('envoy service cases, default settings', {}, {}, (svc) => {
  it('rule shadow mode: the over-limit shadow rule answers OK, and so does the request', async () => {
    assert.deepEqual(shape(await svc().ask('svc', [[['shadowed', 'x']], [['hello', 'world']]])), {
      overallCode: 'OK',
      statuses: [status('OK', 0, 'MINUTE', 0), NO_LIMIT],
    });
  });

  it('mixed shadow: a shadow rule cannot save a request another rule rejects', async () => {
    assert.deepEqual(shape(await svc().ask('svc', [[['shadowed', 'x']], [['blocked', 'x']]])), {
      overallCode: 'OVER_LIMIT',
      statuses: [status('OK', 0, 'MINUTE', 0), status('OVER_LIMIT', 0, 'MINUTE', 0)],
    });
  });

  it('without LIMIT_RESPONSE_HEADERS_ENABLED no header is added, allowed or rejected', async () => {
    assert.deepEqual(headersOf(await svc().ask('svc', [[['foo', 'h']]])), {});
    assert.deepEqual(headersOf(await svc().ask('svc', [[['blocked', 'h']]])), {});
  });

  it('an empty domain and an empty descriptor list are INVALID_ARGUMENT with envoy’s messages', async () => {
    await assert.rejects(svc().ask('', [[['a', 'b']]]), (e: ServiceError) => {
      assert.equal(e.code, grpcStatus.INVALID_ARGUMENT);
      assert.match(e.details, /rate limit domain must not be empty/);
      return true;
    });
    await assert.rejects(svc().ask('svc', []), (e: ServiceError) => {
      assert.equal(e.code, grpcStatus.INVALID_ARGUMENT);
      assert.match(e.details, /rate limit descriptor list must not be empty/);
      return true;
    });
  });

  it('a descriptor with no entries is OK with no limit', async () => {
    assert.deepEqual(shape(await svc().ask('svc', [[], [['foo', 'e']]])), {
      overallCode: 'OK',
      statuses: [NO_LIMIT, status('OK', 10, 'MINUTE', 9)],
    });
  });

  it('unlimited: OK, no current limit, limit_remaining is uint32 max', async () => {
    const res = await svc().ask('svc', [[['ldap', 'x']], [['foo', 'u']]]);
    assert.equal(res.overallCode, 'OK');
    assert.equal(res.statuses?.[0]?.limitRemaining, 4294967295);
    assert.equal(res.statuses?.[0]?.currentLimit ?? null, null);
  });

  it('quota_mode: OVER_LIMIT when every quota descriptor is over', async () => {
    assert.deepEqual(shape(await svc().ask('svc', [[['quota', 'a']], [['quota', 'b']]])), {
      overallCode: 'OVER_LIMIT',
      statuses: [status('OVER_LIMIT', 0, 'HOUR', 0), status('OVER_LIMIT', 0, 'HOUR', 0)],
    });
  });

  it('quota_mode: OK when only some quota descriptors are over (the statuses still say which)', async () => {
    const res = shape(await svc().ask('svc', [[['quota', 'c']], [['quota_ok', 'c']]]));
    assert.equal(res.overallCode, 'OK');
    assert.deepEqual(
      res.statuses.map((s) => s.code),
      ['OVER_LIMIT', 'OK'],
    );
  });

  it('quota_mode mixed with a rate limit: the rate limit over the limit rejects', async () => {
    const res = await svc().ask('svc', [[['quota_ok', 'm']], [['blocked', 'm']]]);
    assert.equal(res.overallCode, 'OVER_LIMIT');
    assert.deepEqual(
      res.statuses?.map((s) => s.code),
      ['OK', 'OVER_LIMIT'],
    );
  });

  it('quota_mode mixed with a rate limit under it: OK', async () => {
    const res = await svc().ask('svc', [[['quota_ok', 'n']], [['foo', 'n']]]);
    assert.equal(res.overallCode, 'OK');
  });

  it('quota_mode with shadow_mode: a shadow quota rule never fails the request', async () => {
    const res = await svc().ask('svc', [[['quota_shadow', 'q']]]);
    assert.equal(res.overallCode, 'OK');
  });

  it('/json: an unknown domain answers 200 OK, as over gRPC', async () => {
    const res = await postJson(`http://127.0.0.1:${svc().sluice.http}/json`, {
      domain: 'nowhere',
      descriptors: [{ entries: [{ key: 'a', value: 'b' }] }],
    });
    assert.equal(res.status, 200);
    assert.equal(res.json.overallCode, 'OK');
  });

  it('grpc.health.v1.Health/Check answers SERVING for "", "ratelimit" and the RLS service; NOT_FOUND otherwise', async () => {
    for (const name of ['', 'ratelimit', 'envoy.service.ratelimit.v3.RateLimitService']) {
      assert.equal(await healthCheck(svc().sluice.grpc, name), 'SERVING');
    }
    await assert.rejects(healthCheck(svc().sluice.grpc, 'other'), (e: ServiceError) => e.code === grpcStatus.NOT_FOUND);
  });
});

group(
  'envoy service cases, LIMIT_RESPONSE_HEADERS_ENABLED with custom names',
  {
    LIMIT_RESPONSE_HEADERS_ENABLED: 'true',
    LIMIT_LIMIT_HEADER: 'A-Ratelimit-Limit',
    LIMIT_REMAINING_HEADER: 'A-Ratelimit-Remaining',
    LIMIT_RESET_HEADER: 'A-Ratelimit-Reset',
  },
  {},
  (svc) => {
    it('the over-limit descriptor gives the three headers, and only those', async () => {
      const res = await svc().ask('svc', [[['blocked', 'h']], [['hello', 'world']]]);
      const headers = headersOf(res);
      assert.deepEqual(Object.keys(headers).sort(), [
        'A-Ratelimit-Limit',
        'A-Ratelimit-Remaining',
        'A-Ratelimit-Reset',
      ]);
      assert.equal(headers['A-Ratelimit-Limit'], '0');
      assert.equal(headers['A-Ratelimit-Remaining'], '0');
      const reset = Number(headers['A-Ratelimit-Reset']);
      assert.ok(reset >= 1 && reset <= 60, `reset ${reset}s within the minute`);
    });

    it('allowed: the descriptor closest to its limit gives them', async () => {
      const res = await svc().ask('svc', [[['quota_ok', 'k']], [['foo', 'k']]]);
      const headers = headersOf(res);
      assert.equal(headers['A-Ratelimit-Limit'], '10');
      assert.equal(headers['A-Ratelimit-Remaining'], '9');
    });

    it('no limit applied: no headers', async () => {
      assert.deepEqual(headersOf(await svc().ask('svc', [[['hello', 'world']]])), {});
    });
  },
);

group(
  'envoy service cases, SHADOW_MODE with default header names',
  { SHADOW_MODE: 'true', LIMIT_RESPONSE_HEADERS_ENABLED: 'true' },
  {},
  (svc) => {
    it('global shadow: the descriptor stays OVER_LIMIT, only overall_code turns OK', async () => {
      assert.deepEqual(shape(await svc().ask('svc', [[['blocked', 'g']], [['hello', 'world']]])), {
        overallCode: 'OK',
        statuses: [status('OVER_LIMIT', 0, 'MINUTE', 0), NO_LIMIT],
      });
    });

    it('global shadow with quota descriptors all over: OK overall, statuses OVER_LIMIT', async () => {
      assert.deepEqual(shape(await svc().ask('svc', [[['quota', 'g1']], [['quota', 'g2']]])), {
        overallCode: 'OK',
        statuses: [status('OVER_LIMIT', 0, 'HOUR', 0), status('OVER_LIMIT', 0, 'HOUR', 0)],
      });
    });

    it('default header names are RateLimit-Limit, RateLimit-Remaining, RateLimit-Reset', async () => {
      const headers = headersOf(await svc().ask('svc', [[['foo', 'd']]]));
      assert.deepEqual(Object.keys(headers).sort(), ['RateLimit-Limit', 'RateLimit-Remaining', 'RateLimit-Reset']);
      assert.equal(headers['RateLimit-Remaining'], '9');
    });
  },
);

/** `dynamic_metadata.fields.metadata` as plain data. */
function passedMetadata(res: unknown): Record<string, string> {
  type Struct = { fields?: Record<string, { stringValue?: string; structValue?: Struct }> };
  const top = (res as { dynamicMetadata?: Struct }).dynamicMetadata;
  const meta = top?.fields?.metadata?.structValue?.fields ?? {};
  return Object.fromEntries(Object.entries(meta).map(([k, v]) => [k, v.stringValue ?? '']));
}

group(
  'envoy service cases, QUOTA_MODE and RESPONSE_DYNAMIC_METADATA',
  { QUOTA_MODE: 'true', RESPONSE_DYNAMIC_METADATA: 'true' },
  {},
  (svc) => {
    it('global quota mode: every descriptor over → OVER_LIMIT', async () => {
      assert.equal((await svc().ask('svc', [[['blocked', 'a']], [['quota', 'a']]])).overallCode, 'OVER_LIMIT');
    });

    it('metadata comes from the descriptors that passed only', async () => {
      const res = await svc().ask('svc', [[['meta1', 'p']], [['meta_over', 'p']]]);
      assert.equal(res.overallCode, 'OK');
      assert.deepEqual(passedMetadata(res), { name: 'service_1' });
    });

    it('metadata of every passed descriptor is merged', async () => {
      const res = await svc().ask('svc', [[['meta1', 'm']], [['meta2', 'm']]]);
      assert.deepEqual(passedMetadata(res), { name: 'service_1', some_other_name: 'service_2' });
    });

    it('an overlapping key keeps the first descriptor’s value', async () => {
      const res = await svc().ask('svc', [[['meta1', 'o']], [['meta3', 'o']]]);
      assert.deepEqual(passedMetadata(res), { name: 'service_1' });
    });

    it('the metadata carries the domain and the descriptors', async () => {
      const res = (await svc().ask('svc', [[['meta1', 'd']]])) as unknown as {
        dynamicMetadata?: { fields?: Record<string, { stringValue?: string }> };
      };
      assert.equal(res.dynamicMetadata?.fields?.domain?.stringValue, 'svc');
    });
  },
);

group(
  'envoy health, HEALTHY_WITH_AT_LEAST_ONE_CONFIG_LOADED',
  { HEALTHY_WITH_AT_LEAST_ONE_CONFIG_LOADED: 'true' },
  { '.keep': '' },
  (svc, runtime) => {
    it('starts on an empty config directory: NOT_SERVING and 503 until a domain loads, then SERVING and 200', async () => {
      const health = () => fetch(`http://127.0.0.1:${svc().sluice.http}/healthcheck`).then((r) => r.status);
      assert.equal(await healthCheck(svc().sluice.grpc, 'ratelimit'), 'NOT_SERVING');
      assert.equal(await health(), 503);
      runtime().write(
        'late.yaml',
        'domain: late\ndescriptors:\n  - key: k\n    rate_limit: { unit: hour, requests_per_unit: 1 }\n',
      );
      await svc().sluice.waitForLog((r) => r.msg === 'config loaded');
      assert.equal(await healthCheck(svc().sluice.grpc, 'ratelimit'), 'SERVING');
      assert.equal(await health(), 200);
    });
  },
);
