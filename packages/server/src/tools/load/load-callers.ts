/**
 * The callers of `sluice bench`'s load: one function per protocol and client that sends request `n` and says
 * whether it was allowed.
 */
import { Agent, request } from 'node:http';
import { createH2RlsClient, type H2RlsClient } from '../../clients/h2-client.js';
import { createRlsClient, type RlsClient } from '../../clients/rls-client.js';
import { encodeRateLimitRequestFrame } from '../../rls/wire.js';

/** What to load and how (the part of `sluice bench`'s options a load thread needs). */
export interface LoadTarget {
  protocol: 'grpc' | 'http';
  /** `host:port` for gRPC, an origin (`http://127.0.0.1:8080`) for HTTP. */
  target: string;
  /** HTTP: `json` (POST /json) or `check` (POST /v1/check). */
  endpoint: 'json' | 'check';
  /** gRPC: the lean HTTP/2 client (`h2`) or @grpc/grpc-js. */
  client: 'h2' | 'grpc-js';
  /** gRPC channels / HTTP sockets of one thread. */
  connections: number;
  domain: string;
  /** Descriptor key, and the prefix of its values (`prefix0`, `prefix1`, ...). */
  key: string;
  prefix: string;
  /** Distinct values cycled through. */
  keys: number;
  /** /v1/check: the policy of each check. */
  limit: number;
  period: string;
}

/** One request; resolves with whether it was allowed. */
export type Call = (n: number) => Promise<'ok' | 'over'>;

/** A caller and how to let go of its connections. */
export interface Caller {
  call: Call;
  close: () => void;
}

/** Makes the function that sends request `n` to the target. */
export function createCaller(t: LoadTarget): Caller {
  if (t.protocol === 'grpc') return t.client === 'h2' ? h2Caller(t) : grpcJsCaller(t);
  return httpCaller(t);
}

/** gRPC on the lean HTTP/2 client, one per connection. */
function h2Caller(t: LoadTarget): Caller {
  const clients = Array.from({ length: t.connections }, () => createH2RlsClient(t.target));
  // Requests are encoded once per key: the load generator should spend its CPU on sending, not encoding.
  const frames: Buffer[] = [];
  const call: Call = async (n) => {
    const k = n % t.keys;
    let frame = frames[k];
    if (frame === undefined) {
      frame = Buffer.from(
        encodeRateLimitRequestFrame({
          domain: t.domain,
          descriptors: [{ entries: [{ key: t.key, value: `${t.prefix}${k}` }] }],
        }),
      );
      if (t.keys <= 100_000) frames[k] = frame;
    }
    const code = await (clients[n % clients.length] as H2RlsClient).shouldRateLimit(frame);
    return code === 'OVER_LIMIT' ? 'over' : 'ok';
  };
  return {
    call,
    close: () => {
      for (const c of clients) c.close();
    },
  };
}

/** gRPC on @grpc/grpc-js. */
function grpcJsCaller(t: LoadTarget): Caller {
  // A channel of its own per connection: grpc-js would otherwise share one subchannel (one TCP socket).
  const clients: RlsClient[] = Array.from({ length: t.connections }, () =>
    createRlsClient(t.target, { 'grpc.use_local_subchannel_pool': 1 }),
  );
  const call: Call = async (n) => {
    const res = await (clients[n % clients.length] as RlsClient).shouldRateLimit(
      { domain: t.domain, descriptors: [{ entries: [{ key: t.key, value: `${t.prefix}${n % t.keys}` }] }] },
      10_000,
    );
    return res.overallCode === 'OVER_LIMIT' ? 'over' : 'ok';
  };
  return {
    call,
    close: () => {
      for (const c of clients) c.close();
    },
  };
}

/** HTTP: POST /json or /v1/check on keep-alive sockets; a 429 (or a refused check) is `over`. */
function httpCaller(t: LoadTarget): Caller {
  const base = new URL(t.target);
  const agent = new Agent({ keepAlive: true, maxSockets: t.connections });
  const path = t.endpoint === 'json' ? '/json' : '/v1/check';
  const call: Call = (n) =>
    new Promise((resolve, reject) => {
      const value = `${t.prefix}${n % t.keys}`;
      const body =
        t.endpoint === 'json'
          ? JSON.stringify({ domain: t.domain, descriptors: [{ entries: [{ key: t.key, value }] }] })
          : JSON.stringify({ checks: [{ key: value, limit: t.limit, period: t.period }] });
      const req = request(
        {
          hostname: base.hostname,
          port: base.port || 80,
          path,
          method: 'POST',
          agent,
          headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => {
            if (res.statusCode === 429) return resolve('over');
            if (res.statusCode !== 200) {
              return reject(new Error(`HTTP ${res.statusCode}: ${Buffer.concat(chunks).toString()}`));
            }
            if (t.endpoint === 'check') {
              const parsed = JSON.parse(Buffer.concat(chunks).toString()) as { results: { allowed?: boolean }[] };
              return resolve(parsed.results[0]?.allowed === false ? 'over' : 'ok');
            }
            resolve('ok');
          });
          res.on('error', reject);
        },
      );
      req.on('error', reject);
      req.end(body);
    });
  return { call, close: () => agent.destroy() };
}
