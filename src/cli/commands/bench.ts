import { Agent, request } from 'node:http';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { parseDuration } from '../../core/duration.js';
import {
  createH2RlsClient,
  createRlsClient,
  encodeRateLimitRequestFrame,
  type H2RlsClient,
  type RlsClient,
} from '../../server/index.js';
import type { Command, CommandIo } from '../command.js';

const HELP = `usage: sluice bench [--grpc HOST:PORT | --http URL] [options]

Loads a running sluice service for a while and reports decisions per second and latency percentiles.
Each caller sends one request, waits for the answer, and sends the next (closed loop), so the
concurrency is the number of requests in flight.

options:
  --grpc HOST:PORT     bench the gRPC API (default 127.0.0.1:8081)
  --http URL           bench the HTTP API instead, e.g. http://127.0.0.1:8080
  --client C           gRPC only: h2 (a lean client on Node's HTTP/2, default) or grpc-js; a load
                       generator sharing the machine must cost less CPU per call than the service
  --endpoint E         HTTP only: json (POST /json, default) or check (POST /v1/check)
  --duration D         how long to measure (default 10s)
  --warmup D           load before measuring, not counted (default 1s)
  --concurrency N      requests in flight (default 64)
  --connections N      gRPC channels / HTTP sockets to spread them over (default: gRPC 1, HTTP = concurrency)
  --domain D           domain of the requests (default example, the built-in example's)
  --descriptor K[=V]   descriptor key (and value prefix) of the requests (default remote_address)
  --keys N             distinct descriptor values to cycle through (default 10000)
  --limit N --period P /v1/check only: the policy of each check (default 100 per 1m)
  --json               print the result as JSON
  -h, --help           show this help

examples:
  sluice bench --duration 10s --concurrency 64
  sluice bench --http http://127.0.0.1:8080 --endpoint check --keys 1
`;

/** What one run measured. */
export interface BenchResult {
  target: string;
  protocol: 'grpc' | 'http';
  endpoint: string;
  concurrency: number;
  connections: number;
  durationS: number;
  decisions: number;
  ok: number;
  overLimit: number;
  errors: number;
  decisionsPerS: number;
  latencyMs: { p50: number; p90: number; p99: number; max: number };
  /** The first error seen, if any. */
  firstError?: string;
}

type Call = (n: number) => Promise<'ok' | 'over'>;

class UsageError extends Error {}

function int(value: string | undefined, name: string, fallback: number, min = 1): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!Number.isInteger(n) || n < min) throw new UsageError(`${name}: expected a whole number >= ${min}`);
  return n;
}

function grpcCaller(
  target: string,
  connections: number,
  domain: string,
  key: string,
  prefix: string,
  keys: number,
  client: 'h2' | 'grpc-js',
) {
  if (client === 'h2') {
    const h2 = Array.from({ length: connections }, () => createH2RlsClient(target));
    // Requests are encoded once per key: the load generator should spend its CPU on sending, not encoding.
    const frames: Buffer[] = [];
    const call: Call = async (n) => {
      const c = h2[n % h2.length] as H2RlsClient;
      const k = n % keys;
      let frame = frames[k];
      if (frame === undefined) {
        frame = Buffer.from(
          encodeRateLimitRequestFrame({ domain, descriptors: [{ entries: [{ key, value: `${prefix}${k}` }] }] }),
        );
        if (keys <= 100_000) frames[k] = frame;
      }
      const code = await c.shouldRateLimit(frame);
      return code === 'OVER_LIMIT' ? 'over' : 'ok';
    };
    return {
      call,
      close: () => {
        for (const c of h2) c.close();
      },
    };
  }
  const clients: RlsClient[] = [];
  // A channel of its own per connection: grpc-js would otherwise share one subchannel (one TCP socket).
  for (let i = 0; i < connections; i++) clients.push(createRlsClient(target, { 'grpc.use_local_subchannel_pool': 1 }));
  const call: Call = async (n) => {
    const client = clients[n % clients.length] as RlsClient;
    const res = await client.shouldRateLimit(
      { domain, descriptors: [{ entries: [{ key, value: `${prefix}${n % keys}` }] }] },
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

function httpCaller(
  base: URL,
  endpoint: 'json' | 'check',
  connections: number,
  domain: string,
  key: string,
  prefix: string,
  keys: number,
  limit: number,
  period: string,
) {
  const agent = new Agent({ keepAlive: true, maxSockets: connections });
  const path = endpoint === 'json' ? '/json' : '/v1/check';
  const call: Call = (n) =>
    new Promise((resolve, reject) => {
      const value = `${prefix}${n % keys}`;
      const body =
        endpoint === 'json'
          ? JSON.stringify({ domain, descriptors: [{ entries: [{ key, value }] }] })
          : JSON.stringify({ checks: [{ key: value, limit, period }] });
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
            if (res.statusCode !== 200)
              return reject(new Error(`HTTP ${res.statusCode}: ${Buffer.concat(chunks).toString()}`));
            if (endpoint === 'check') {
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

function percentile(sorted: Float64Array, q: number): number {
  if (sorted.length === 0) return 0;
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1));
  return sorted[i] as number;
}

/**
 * Runs `concurrency` closed-loop callers for `warmupMs + durationMs`, recording latencies after the warmup.
 * `progress` is called about four times a second with the elapsed measuring time and the decisions so far.
 */
export async function runBench(
  call: Call,
  concurrency: number,
  warmupMs: number,
  durationMs: number,
  progress: (elapsedMs: number, decisions: number) => void,
): Promise<Omit<BenchResult, 'target' | 'protocol' | 'endpoint' | 'connections' | 'concurrency'>> {
  let samples = new Float64Array(1 << 16);
  let count = 0;
  let ok = 0;
  let over = 0;
  let errors = 0;
  let firstError: string | undefined;
  let n = 0;
  const startAt = performance.now();
  const measureAt = startAt + warmupMs;
  const endAt = measureAt + durationMs;
  const timer = setInterval(() => {
    const now = performance.now();
    if (now >= measureAt) progress(Math.min(durationMs, now - measureAt), count);
  }, 250);
  const worker = async () => {
    for (;;) {
      const t0 = performance.now();
      if (t0 >= endAt) return;
      let outcome: 'ok' | 'over' | 'error';
      try {
        outcome = await call(n++);
      } catch (error) {
        outcome = 'error';
        firstError ??= (error as Error).message;
      }
      const t1 = performance.now();
      if (t0 < measureAt) continue;
      if (outcome === 'error') {
        errors++;
        // Do not spin on a dead target.
        await new Promise((r) => setTimeout(r, 10));
        continue;
      }
      if (outcome === 'ok') ok++;
      else over++;
      if (count === samples.length) {
        const bigger = new Float64Array(samples.length * 2);
        bigger.set(samples);
        samples = bigger;
      }
      samples[count++] = t1 - t0;
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  clearInterval(timer);
  progress(durationMs, count);
  const measuredS = Math.min(durationMs, performance.now() - measureAt) / 1000;
  const sorted = samples.subarray(0, count).sort();
  const round = (x: number) => Math.round(x * 1000) / 1000;
  return {
    durationS: round(measuredS),
    decisions: count,
    ok,
    overLimit: over,
    errors,
    decisionsPerS: Math.round(count / measuredS),
    latencyMs: {
      p50: round(percentile(sorted, 0.5)),
      p90: round(percentile(sorted, 0.9)),
      p99: round(percentile(sorted, 0.99)),
      max: round(percentile(sorted, 1)),
    },
    ...(firstError === undefined ? {} : { firstError }),
  };
}

function progressBar(io: CommandIo, durationMs: number): (elapsedMs: number, decisions: number) => void {
  const tty = process.stderr.isTTY === true;
  let lastLine = -1;
  return (elapsedMs, decisions) => {
    const rate = elapsedMs > 0 ? Math.round((decisions / elapsedMs) * 1000) : 0;
    const text = `${(elapsedMs / 1000).toFixed(1)}/${(durationMs / 1000).toFixed(1)} s  ${decisions.toLocaleString('en-US')} decisions  ${rate.toLocaleString('en-US')}/s`;
    if (tty) {
      const width = 30;
      const filled = Math.round((elapsedMs / durationMs) * width);
      process.stderr.write(`\r[${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${text}   `);
      if (elapsedMs >= durationMs) process.stderr.write('\n');
    } else {
      const second = Math.floor(elapsedMs / 1000);
      if (second !== lastLine || elapsedMs >= durationMs) {
        lastLine = second;
        io.err(`bench: ${text}`);
      }
    }
  };
}

function format(r: BenchResult): string {
  const n = (x: number) => x.toLocaleString('en-US');
  return [
    `target        ${r.protocol === 'grpc' ? 'grpc://' : ''}${r.target}${r.protocol === 'http' ? ` (POST /${r.endpoint === 'json' ? 'json' : 'v1/check'})` : ''}`,
    `concurrency   ${r.concurrency} in flight over ${r.connections} connection${r.connections === 1 ? '' : 's'}`,
    `duration      ${r.durationS} s`,
    `decisions     ${n(r.decisions)} (OK ${n(r.ok)}, OVER_LIMIT ${n(r.overLimit)}), errors ${n(r.errors)}`,
    `decisions/s   ${n(r.decisionsPerS)}`,
    `latency ms    p50 ${r.latencyMs.p50}  p90 ${r.latencyMs.p90}  p99 ${r.latencyMs.p99}  max ${r.latencyMs.max}`,
    ...(r.firstError === undefined ? [] : [`first error   ${r.firstError}`]),
  ].join('\n');
}

/** `sluice bench`. */
export const benchCommand: Command = {
  name: 'bench',
  summary: 'load a running service over gRPC or HTTP; report decisions/s and latency percentiles',
  help: HELP,
  async run(argv, io) {
    let values: Record<string, string | boolean | undefined>;
    try {
      values = parseArgs({
        args: [...argv],
        strict: true,
        options: {
          grpc: { type: 'string' },
          client: { type: 'string' },
          http: { type: 'string' },
          endpoint: { type: 'string' },
          duration: { type: 'string' },
          warmup: { type: 'string' },
          concurrency: { type: 'string' },
          connections: { type: 'string' },
          domain: { type: 'string' },
          descriptor: { type: 'string' },
          keys: { type: 'string' },
          limit: { type: 'string' },
          period: { type: 'string' },
          json: { type: 'boolean' },
        },
      }).values;
    } catch (error) {
      io.err(`sluice bench: ${(error as Error).message}\n\n${HELP}`);
      return 2;
    }
    let caller: { call: Call; close: () => void };
    let result: BenchResult;
    try {
      if (values.grpc !== undefined && values.http !== undefined)
        throw new UsageError('give --grpc or --http, not both');
      const durationMs = parseDuration((values.duration as string | undefined) ?? '10s', '--duration');
      const warmupMs = parseDuration((values.warmup as string | undefined) ?? '1s', '--warmup');
      if (durationMs < 100) throw new UsageError('--duration: at least 100ms');
      const concurrency = int(values.concurrency as string | undefined, '--concurrency', 64);
      const keys = int(values.keys as string | undefined, '--keys', 10_000);
      const domain = (values.domain as string | undefined) ?? 'example';
      const [key = 'remote_address', prefix = ''] = (
        (values.descriptor as string | undefined) ?? 'remote_address'
      ).split('=', 2);
      const endpoint = ((values.endpoint as string | undefined) ?? 'json') as 'json' | 'check';
      if (endpoint !== 'json' && endpoint !== 'check') throw new UsageError('--endpoint: json or check');
      const http = values.http as string | undefined;
      let target: string;
      let connections: number;
      if (http !== undefined) {
        let base: URL;
        try {
          base = new URL(http);
        } catch {
          throw new UsageError(`--http: '${http}' is not a URL`);
        }
        target = base.origin;
        connections = int(values.connections as string | undefined, '--connections', concurrency);
        const limit = int(values.limit as string | undefined, '--limit', 100);
        const period = (values.period as string | undefined) ?? '1m';
        caller = httpCaller(base, endpoint, connections, domain, key, prefix, keys, limit, period);
      } else {
        target = (values.grpc as string | undefined) ?? '127.0.0.1:8081';
        connections = int(values.connections as string | undefined, '--connections', 1);
        const client = (values.client as string | undefined) ?? 'h2';
        if (client !== 'h2' && client !== 'grpc-js') throw new UsageError('--client: h2 or grpc-js');
        caller = grpcCaller(target, connections, domain, key, prefix, keys, client);
      }
      // One call first: a wrong target or domain should fail fast with its reason, not after the run.
      await caller.call(0).catch((error: unknown) => {
        caller.close();
        throw new UsageError(`cannot reach ${target}: ${(error as Error).message}`);
      });
      const measured = await runBench(caller.call, concurrency, warmupMs, durationMs, progressBar(io, durationMs));
      caller.close();
      result = {
        target,
        protocol: http === undefined ? 'grpc' : 'http',
        endpoint: http === undefined ? 'ShouldRateLimit' : endpoint,
        concurrency,
        connections,
        ...measured,
      };
    } catch (error) {
      if (error instanceof UsageError || (error as { code?: string }).code?.startsWith('ERR_SLUICE')) {
        io.err(`sluice bench: ${(error as Error).message}`);
        return 2;
      }
      throw error;
    }
    io.out(values.json === true ? JSON.stringify(result) : format(result));
    return result.errors > 0 && result.decisions === 0 ? 1 : 0;
  },
};
