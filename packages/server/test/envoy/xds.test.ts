/**
 * The xDS config source (CONFIG_TYPE=GRPC_XDS_SOTW) against an xDS management server written for the tests
 * (xds-management-server.ts) with @grpc/grpc-js from the shipped protos: state-of-the-world ADS,
 * RateLimitConfig resources encoded with protobufjs. Reproduces envoy ratelimit's xds_sotw_integration_test.go and
 * xds_grpc_sotw_provider_test.go cases — initial config, updates, several domains, deeper limits, the same
 * domain twice — plus what files already guarantee: an invalid config is NACKed and the last good one
 * stays, and a dropped stream is reopened, asking with the last accepted version.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type EnvoyService, NO_LIMIT, shape, startEnvoy, status } from './harness.js';
import { domain, limit, ManagementServer, type Request, TYPE_URL, untilReady } from './xds-management-server.js';

const ack = (version: string) => (r: Request) =>
  r.versionInfo === version && !!r.responseNonce && r.errorDetail === undefined;

describe(`xDS config source, state of the world`, () => {
  let mgmt: ManagementServer;
  let svc: EnvoyService;
  before(async () => {
    mgmt = new ManagementServer();
    await mgmt.start();
    mgmt.set('1', [domain('xds-a', [{ key: 'k', rateLimit: limit('HOUR', 2) }])]);
    svc = await startEnvoy({
      CONFIG_TYPE: 'GRPC_XDS_SOTW',
      CONFIG_GRPC_XDS_SERVER_URL: `127.0.0.1:${mgmt.port}`,
      CONFIG_GRPC_XDS_NODE_ID: 'sluice-test',
      CONFIG_GRPC_XDS_NODE_METADATA: 'zone=z1',
      CONFIG_GRPC_XDS_CLIENT_ADDITIONAL_HEADERS: 'x-auth:secret',
      XDS_CLIENT_BACKOFF_INITIAL_INTERVAL: '50ms',
    });
  });
  after(async () => {
    assert.equal(await svc?.stop(), 0);
    mgmt?.stop();
  });

  it('initial config: ready once it arrived; ACKed with its version, the node and the headers', async () => {
    await untilReady(svc.sluice.http);
    assert.deepEqual(shape(await svc.ask('xds-a', [[['k', 'v1']]])).statuses, [status('OK', 2, 'HOUR', 1)]);
    const request = await mgmt.next(ack('1'));
    assert.equal(request.node?.id, 'sluice-test');
    assert.equal(request.node?.metadata?.fields?.zone?.stringValue, 'z1');
    assert.equal(request.typeUrl, TYPE_URL);
    assert.deepEqual(mgmt.headers[0]?.['x-auth'], 'secret');
  });

  it('an update replaces the rules; several domains and deeper limits', async () => {
    mgmt.set('2', [
      domain('xds-a', [{ key: 'k', rateLimit: limit('MINUTE', 5) }]),
      domain('xds-b', [{ key: 'outer', value: 'x', descriptors: [{ key: 'inner', rateLimit: limit('DAY', 7) }] }]),
    ]);
    await mgmt.next(ack('2'));
    assert.deepEqual(shape(await svc.ask('xds-a', [[['k', 'v2']]])).statuses, [status('OK', 5, 'MINUTE', 4)]);
    const deep = [
      ['outer', 'x'],
      ['inner', 'y'],
    ] as [string, string][];
    assert.deepEqual(shape(await svc.ask('xds-b', [deep])).statuses, [status('OK', 7, 'DAY', 6)]);
  });

  it('metadata, quota_mode, shadow_mode, unlimited and replaces arrive as in files', async () => {
    mgmt.set('3', [
      domain('xds-a', [{ key: 'k', rateLimit: limit('MINUTE', 5) }]),
      domain('xds-c', [
        {
          key: 'q',
          quotaMode: true,
          rateLimit: limit('HOUR', 0),
          metadata: { fields: { name: { stringValue: 'svc' } } },
        },
        { key: 's', shadowMode: true, rateLimit: limit('HOUR', 0) },
        { key: 'u', rateLimit: { unlimited: true } },
      ]),
    ]);
    await mgmt.next(ack('3'));
    const res = await svc.ask('xds-c', [[['q', '1']], [['s', '1']], [['u', '1']]]);
    // One quota descriptor, over: all quota descriptors are over.
    assert.equal(res.overallCode, 'OVER_LIMIT');
    assert.deepEqual(
      res.statuses?.map((s) => s.code),
      ['OVER_LIMIT', 'OK', 'OK'],
    );
    assert.equal(res.statuses?.[2]?.limitRemaining, 4294967295);
  });

  it('an invalid config is NACKed with the problems, and the last good rules stay', async () => {
    mgmt.set('4', [domain('xds-a', [{ key: 'k', rateLimit: limit('UNKNOWN', 1) }])]);
    const nack = await mgmt.next((r) => r.errorDetail !== undefined && r.versionInfo === '3');
    assert.equal(nack.errorDetail?.code, 3);
    assert.match(nack.errorDetail?.message ?? '', /ERR_SLUICE_RULES_UNKNOWN_UNIT/);
    assert.deepEqual(shape(await svc.ask('xds-a', [[['k', 'v4']]])).statuses, [status('OK', 5, 'MINUTE', 4)]);
  });

  it('the same domain twice is NACKed (MERGE_DOMAIN_CONFIG is off)', async () => {
    mgmt.set('5', [
      domain('xds-a', [{ key: 'k', rateLimit: limit('HOUR', 1) }]),
      domain('xds-a', [{ key: 'j', rateLimit: limit('HOUR', 1) }]),
    ]);
    const nack = await mgmt.next(
      (r) => r.errorDetail !== undefined && /DUPLICATE_DOMAIN/.test(r.errorDetail.message ?? ''),
    );
    assert.equal(nack.versionInfo, '3');
  });

  it('a dropped stream is reopened, asking with the last accepted version; the rules stay meanwhile', async () => {
    mgmt.set('6', [domain('xds-a', [{ key: 'k', rateLimit: limit('HOUR', 9) }])]);
    await mgmt.next(ack('6'));
    const before = mgmt.requests.length;
    mgmt.dropStreams();
    assert.deepEqual(shape(await svc.ask('xds-a', [[['k', 'v6']]])).statuses, [status('OK', 9, 'HOUR', 8)]);
    const reopened = await mgmt.next((r) => mgmt.requests.indexOf(r) >= before && !r.responseNonce);
    assert.equal(reopened.versionInfo, '6');
    assert.equal(reopened.node?.id, 'sluice-test');
  });

  it('an unknown domain answers OK with no limit, as with files', async () => {
    assert.deepEqual(shape(await svc.ask('nowhere', [[['k', 'v']]])).statuses, [NO_LIMIT]);
  });
});

describe('xDS with FORCE_START_WITHOUT_INITIAL_CONFIG=true', () => {
  it('serves at once, with every domain unknown, while no management server answers', async () => {
    const svc = await startEnvoy({
      CONFIG_TYPE: 'GRPC_XDS_SOTW',
      CONFIG_GRPC_XDS_SERVER_URL: '127.0.0.1:1',
      XDS_CLIENT_BACKOFF_INITIAL_INTERVAL: '1s',
      FORCE_START_WITHOUT_INITIAL_CONFIG: 'true',
    });
    assert.deepEqual(shape(await svc.ask('xds-a', [[['k', 'v']]])).statuses, [NO_LIMIT]);
    assert.equal(await svc.stop(), 0);
  });
});
