/**
 * The xDS config source (CONFIG_TYPE=GRPC_XDS_SOTW) against an xDS management server written here with
 * @grpc/grpc-js from the shipped protos: state-of-the-world ADS, RateLimitConfig resources encoded by this
 * test with protobufjs. Reproduces envoy ratelimit's xds_sotw_integration_test.go and
 * xds_grpc_sotw_provider_test.go cases — initial config, updates, several domains, deeper limits, the same
 * domain twice — plus what files already guarantee: an invalid config is NACKed and the last good one
 * stays, and a dropped stream is reopened, asking with the last accepted version.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import {
  loadPackageDefinition,
  Server,
  ServerCredentials,
  type ServerDuplexStream,
  type ServiceDefinition,
} from '@grpc/grpc-js';
import { loadSync } from '@grpc/proto-loader';
import protobuf from 'protobufjs';
import { PROTO_DIR } from '../../src/grpc/proto.js';
import { type EnvoyService, GRPC_SERVERS, NO_LIMIT, shape, startEnvoy, status } from './harness.js';

const TYPE_URL = 'type.googleapis.com/ratelimit.config.ratelimit.v3.RateLimitConfig';

/** The RateLimitConfig type, loaded by this test from the proto file. */
function configType(): protobuf.Type {
  const root = new protobuf.Root();
  root.resolvePath = (_o, target) =>
    target.startsWith('/') || target.startsWith('google/protobuf/') ? target : `${PROTO_DIR}${target}`;
  root.loadSync(`${PROTO_DIR}ratelimit/config/ratelimit/v3/rls_conf.proto`);
  return root.lookupType('ratelimit.config.ratelimit.v3.RateLimitConfig');
}

interface Request {
  versionInfo?: string;
  node?: { id?: string; metadata?: { fields?: Record<string, { stringValue?: string }> } };
  typeUrl?: string;
  responseNonce?: string;
  errorDetail?: { code?: number; message?: string };
}

/** A state-of-the-world ADS management server holding one snapshot of RateLimitConfig resources. */
class ManagementServer {
  private readonly server = new Server();
  private readonly streams = new Set<ServerDuplexStream<Request, unknown>>();
  private readonly type = configType();
  private snapshot: { version: string; resources: Record<string, unknown>[] } = { version: '', resources: [] };
  private nonce = 0;
  private waiters: { match: (r: Request) => boolean; resolve: (r: Request) => void }[] = [];
  readonly requests: Request[] = [];
  readonly headers: Record<string, unknown>[] = [];
  port = 0;

  async start(): Promise<void> {
    const definition = loadSync('envoy/service/discovery/v3/ads.proto', {
      includeDirs: [PROTO_DIR],
      keepCase: false,
      defaults: false,
    });
    const ads = (
      loadPackageDefinition(definition) as unknown as {
        envoy: { service: { discovery: { v3: { AggregatedDiscoveryService: { service: ServiceDefinition } } } } };
      }
    ).envoy.service.discovery.v3.AggregatedDiscoveryService.service;
    this.server.addService(ads, {
      StreamAggregatedResources: (stream: ServerDuplexStream<Request, unknown>) => {
        this.streams.add(stream);
        this.headers.push(stream.metadata.getMap());
        stream.on('data', (request: Request) => {
          this.requests.push(request);
          this.waiters = this.waiters.filter((w) => {
            if (!w.match(request)) return true;
            w.resolve(request);
            return false;
          });
          // The first request of a stream asks for the state of the world.
          if (!request.responseNonce && this.snapshot.version !== '') this.push(stream);
        });
        stream.on('end', () => stream.end());
        stream.on('close', () => this.streams.delete(stream));
        stream.on('error', () => this.streams.delete(stream));
      },
    });
    this.port = await new Promise((resolve, reject) =>
      this.server.bindAsync('127.0.0.1:0', ServerCredentials.createInsecure(), (e, p) => (e ? reject(e) : resolve(p))),
    );
  }

  /** Sets the snapshot and pushes it to every open stream. */
  set(version: string, resources: Record<string, unknown>[]): void {
    this.snapshot = { version, resources };
    for (const stream of this.streams) this.push(stream);
  }

  private push(stream: ServerDuplexStream<Request, unknown>): void {
    stream.write({
      versionInfo: this.snapshot.version,
      typeUrl: TYPE_URL,
      nonce: String(++this.nonce),
      resources: this.snapshot.resources.map((r) => ({
        // protobufjs' built-in Any keeps its snake_case field name.
        type_url: TYPE_URL,
        value: Buffer.from(this.type.encode(this.type.fromObject(r)).finish()),
      })),
    });
  }

  /** The next request matching `match` (or one already received). */
  next(match: (r: Request) => boolean): Promise<Request> {
    const seen = this.requests.find(match);
    if (seen !== undefined) return Promise.resolve(seen);
    return new Promise((resolve) => this.waiters.push({ match, resolve }));
  }

  /** Ends every stream, as a management server restart would. */
  dropStreams(): void {
    // The server ends each stream (status OK): the client sees the end, as after a server restart.
    for (const stream of this.streams) stream.end();
    this.streams.clear();
  }

  stop(): void {
    this.server.forceShutdown();
  }
}

const limit = (unit: string, requestsPerUnit: number) => ({ unit, requestsPerUnit });
const domain = (name: string, descriptors: Record<string, unknown>[]) => ({ name, domain: name, descriptors });
const ack = (version: string) => (r: Request) =>
  r.versionInfo === version && !!r.responseNonce && r.errorDetail === undefined;

for (const grpcServer of GRPC_SERVERS) {
  describe(`xDS config source, state of the world (--grpc-server ${grpcServer})`, () => {
    let mgmt: ManagementServer;
    let svc: EnvoyService;
    before(async () => {
      mgmt = new ManagementServer();
      await mgmt.start();
      mgmt.set('1', [domain('xds-a', [{ key: 'k', rateLimit: limit('HOUR', 2) }])]);
      svc = await startEnvoy(grpcServer, {
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

    it('initial config: served only after it arrived; ACKed with its version, the node and the headers', async () => {
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
}

describe('xDS with FORCE_START_WITHOUT_INITIAL_CONFIG=true', () => {
  it('serves at once, with every domain unknown, while no management server answers', async () => {
    const svc = await startEnvoy('grpc-js', {
      CONFIG_TYPE: 'GRPC_XDS_SOTW',
      CONFIG_GRPC_XDS_SERVER_URL: '127.0.0.1:1',
      XDS_CLIENT_BACKOFF_INITIAL_INTERVAL: '1s',
      FORCE_START_WITHOUT_INITIAL_CONFIG: 'true',
    });
    assert.deepEqual(shape(await svc.ask('xds-a', [[['k', 'v']]])).statuses, [NO_LIMIT]);
    assert.equal(await svc.stop(), 0);
  });
});
