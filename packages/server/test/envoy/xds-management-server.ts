/**
 * An xDS management server for tests, written with @grpc/grpc-js from the shipped protos: state-of-the-world
 * ADS holding one snapshot of RateLimitConfig resources, encoded with protobufjs. Used by the xDS suite
 * (xds.test.ts) and the xDS start abuse test (abuse/xds-start.test.ts).
 */
import {
  loadPackageDefinition,
  Server,
  ServerCredentials,
  type ServerDuplexStream,
  type ServiceDefinition,
} from '@grpc/grpc-js';
import { loadSync } from '@grpc/proto-loader';
import protobuf from 'protobufjs';
import { PROTO_DIR } from '../../src/support/proto.js';

export const TYPE_URL = 'type.googleapis.com/ratelimit.config.ratelimit.v3.RateLimitConfig';

/** The RateLimitConfig type, loaded from the proto file. */
function configType(): protobuf.Type {
  const root = new protobuf.Root();
  root.resolvePath = (_o, target) =>
    target.startsWith('/') || target.startsWith('google/protobuf/') ? target : `${PROTO_DIR}${target}`;
  root.loadSync(`${PROTO_DIR}ratelimit/config/ratelimit/v3/rls_conf.proto`);
  return root.lookupType('ratelimit.config.ratelimit.v3.RateLimitConfig');
}

export interface Request {
  versionInfo?: string;
  node?: { id?: string; metadata?: { fields?: Record<string, { stringValue?: string }> } };
  typeUrl?: string;
  responseNonce?: string;
  errorDetail?: { code?: number; message?: string };
}

/** A state-of-the-world ADS management server holding one snapshot of RateLimitConfig resources. */
export class ManagementServer {
  private readonly server = new Server();
  private readonly streams = new Set<ServerDuplexStream<Request, unknown>>();
  private readonly type = configType();
  private snapshot: { version: string; resources: Record<string, unknown>[] } = { version: '', resources: [] };
  private nonce = 0;
  private waiters: { match: (r: Request) => boolean; resolve: (r: Request) => void }[] = [];
  readonly requests: Request[] = [];
  readonly headers: Record<string, unknown>[] = [];
  port = 0;

  /** Listens on loopback `port` (0: any free one). */
  async start(port = 0): Promise<void> {
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
      this.server.bindAsync(`127.0.0.1:${port}`, ServerCredentials.createInsecure(), (e, p) =>
        e ? reject(e) : resolve(p),
      ),
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

/** A rate limit of a RateLimitConfig descriptor. */
export const limit = (unit: string, requestsPerUnit: number) => ({ unit, requestsPerUnit });
/** A RateLimitConfig resource: one domain's descriptors. */
export const domain = (name: string, descriptors: Record<string, unknown>[]) => ({ name, domain: name, descriptors });

/**
 * Resolves with `/healthcheck`'s status once it is 200, polling (a service on xDS is not ready until its
 * first config arrives); rejects with the last status after `timeoutMs`.
 */
export async function untilReady(httpPort: number, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last = 0;
  while (Date.now() < deadline) {
    last = (await fetch(`http://127.0.0.1:${httpPort}/healthcheck`)).status;
    if (last === 200) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`/healthcheck still answered ${last} after ${timeoutMs} ms`);
}
