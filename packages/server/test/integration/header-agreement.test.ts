/**
 * The service's rate-limit headers say what the middleware says for the same policy, for every
 * algorithm and on every protocol: `/json`, gRPC `response_headers_to_add` and the gateway. For a bucket,
 * `q` is its capacity (burst) and `r` what is left of it, as the status's `limitRemaining` says.
 */
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { ALGORITHMS, type AlgorithmName, isBucketAlgorithm } from 'sluice';
import { rateLimit } from 'sluice/node';
import { createRlsClient, type RlsClient } from '../../src/index.js';
import { postJson, type SluiceProcess, startSluice, tempFile, unique } from './helpers.js';

/** 10 a minute; a bucket holds 20. */
const policyOf = (algorithm: AlgorithmName) => ({
  algorithm,
  limit: 10,
  period: '1m',
  ...(isBucketAlgorithm(algorithm) ? { burst: 20 } : {}),
});

const RULES = `domain: hdr
descriptors:
${ALGORITHMS.map(
  (a) => `  - key: alg
    value: ${a}
    descriptors:
      - key: user
        rate_limit: { name: ${a}, unit: minute, requests_per_unit: 10, algorithm: ${a}${isBucketAlgorithm(a) ? ', burst: 20' : ''} }`,
).join('\n')}
http:
  rate_limits:
    - actions:
        - request_headers: { header_name: x-alg, descriptor_key: alg }
        - request_headers: { header_name: x-user, descriptor_key: user }
`;

const NAMES = ['x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset', 'ratelimit-policy', 'ratelimit'];

/** The rate-limit headers of a response, `t` and the reset as numbers (they may differ by a second's rounding). */
function facts(headers: Record<string, string | undefined>) {
  const state = /^"([^"]+)";r=(\d+);t=(\d+)$/.exec(headers.ratelimit ?? '');
  assert.ok(state, `RateLimit: ${headers.ratelimit}`);
  return {
    exact: {
      limit: headers['x-ratelimit-limit'],
      remaining: headers['x-ratelimit-remaining'],
      policy: headers['ratelimit-policy'],
      name: state[1],
      r: state[2],
    },
    t: Number(state[3]),
    reset: Number(headers['x-ratelimit-reset']),
  };
}

function pick(get: (name: string) => string | null | undefined): Record<string, string | undefined> {
  return Object.fromEntries(NAMES.map((n) => [n, get(n) ?? undefined]));
}

describe('rate-limit headers: the service agrees with the middleware', { timeout: 120_000 }, () => {
  let sluice: SluiceProcess;
  let client: RlsClient;
  let upstream: Server;
  let config: ReturnType<typeof tempFile>;
  before(async () => {
    upstream = createServer((_req, res) => res.end('ok'));
    await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
    config = tempFile('headers.yaml', RULES);
    const port = (upstream.address() as AddressInfo).port;
    sluice = await startSluice(['--config', config.path, '--upstream', `http://127.0.0.1:${port}`]);
    client = createRlsClient(`127.0.0.1:${sluice.grpc}`);
  });
  after(async () => {
    client?.close();
    await sluice?.stop();
    upstream?.closeAllConnections();
    await new Promise((resolve) => upstream?.close(resolve));
    config?.remove();
  });

  /** The middleware's headers after `n` requests under the algorithm's policy. */
  async function middleware(algorithm: AlgorithmName, n: number) {
    const server = createServer(rateLimit({ ...policyOf(algorithm), name: algorithm })((_req, res) => res.end('ok')));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      let res: Response | undefined;
      for (let i = 0; i < n; i++) {
        res = await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/`);
        await res.arrayBuffer();
      }
      return pick((name) => res?.headers.get(name));
    } finally {
      server.closeAllConnections();
      server.close();
    }
  }

  const descriptors = (algorithm: string, user: string) => [
    {
      entries: [
        { key: 'alg', value: algorithm },
        { key: 'user', value: user },
      ],
    },
  ];

  const protocols: Record<string, (algorithm: string, user: string) => Promise<Record<string, string | undefined>>> = {
    '/json': async (algorithm, user) => {
      const res = await postJson(`http://127.0.0.1:${sluice.http}/json`, {
        domain: 'hdr',
        descriptors: descriptors(algorithm, user),
      });
      return pick((name) => res.headers.get(name));
    },
    gRPC: async (algorithm, user) => {
      const res = await client.shouldRateLimit({ domain: 'hdr', descriptors: descriptors(algorithm, user) }, 5000);
      const added = Object.fromEntries((res.responseHeadersToAdd ?? []).map((h) => [h.key.toLowerCase(), h.value]));
      return pick((name) => added[name]);
    },
    gateway: async (algorithm, user) => {
      const res = await fetch(`http://127.0.0.1:${sluice.proxy}/`, { headers: { 'x-alg': algorithm, 'x-user': user } });
      await res.arrayBuffer();
      return pick((name) => res.headers.get(name));
    },
  };

  for (const algorithm of ALGORITHMS) {
    it(`${algorithm}: after 1 and 3 requests, on /json, gRPC and the gateway`, async () => {
      for (const n of [1, 3]) {
        for (const [protocol, ask] of Object.entries(protocols)) {
          const user = unique('u');
          let got: Record<string, string | undefined> = {};
          for (let i = 0; i < n; i++) got = await ask(algorithm, user);
          const have = facts(got);
          // Asked right after, so a window's real-time countdown agrees to within a second's rounding.
          const want = facts(await middleware(algorithm, n));
          assert.deepEqual(have.exact, want.exact, `${protocol}, ${n} request(s)`);
          assert.ok(Math.abs(have.t - want.t) <= 1, `${protocol}: t=${have.t}, the middleware's t=${want.t}`);
          assert.ok(Math.abs(have.reset - want.reset) <= 1, `${protocol}: reset ${have.reset} vs ${want.reset}`);
        }
      }
    });
  }
});
