/** `sluice bench`: load a running service over gRPC or HTTP from worker threads and report decisions/s and latency. */
import { parseArgs } from 'node:util';
import { parseDuration } from 'sluice';
import {
  createCaller,
  type LoadSummary,
  type LoadTarget,
  runLoad,
  runLoadThreads,
  summarize,
} from '../../tools/load/load.js';
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
  --connections N      gRPC channels / HTTP sockets to spread them over (default: gRPC 1 per thread,
                       HTTP = concurrency)
  --threads N          load threads, each with its own connections (default 1); one event loop is a
                       ceiling of its own, and the load generator must not be what is measured
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

/** What one run measured: the load's summary, and how the load was sent. */
export interface BenchResult extends LoadSummary {
  target: string;
  protocol: 'grpc' | 'http';
  endpoint: string;
  concurrency: number;
  connections: number;
  /** Load threads the requests were sent from. */
  threads: number;
}

class UsageError extends Error {}

function int(value: string | undefined, name: string, fallback: number, min = 1): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!Number.isInteger(n) || n < min) throw new UsageError(`${name}: expected a whole number >= ${min}`);
  return n;
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
    `concurrency   ${r.concurrency} in flight over ${r.connections} connection${r.connections === 1 ? '' : 's'}${r.threads > 1 ? ` from ${r.threads} threads` : ''}`,
    `duration      ${r.durationS} s`,
    `decisions     ${n(r.decisions)} (OK ${n(r.ok)}, OVER_LIMIT ${n(r.overLimit)}), errors ${n(r.errors)}`,
    `decisions/s   ${n(r.decisionsPerS)}`,
    `latency ms    p50 ${r.latencyMs.p50}  p90 ${r.latencyMs.p90}  p99 ${r.latencyMs.p99}  max ${r.latencyMs.max}`,
    ...(r.firstError === undefined ? [] : [`first error   ${r.firstError}`]),
  ].join('\n');
}

/** The flags of `sluice bench`. */
const OPTIONS = {
  grpc: { type: 'string' },
  client: { type: 'string' },
  http: { type: 'string' },
  endpoint: { type: 'string' },
  duration: { type: 'string' },
  warmup: { type: 'string' },
  concurrency: { type: 'string' },
  threads: { type: 'string' },
  connections: { type: 'string' },
  domain: { type: 'string' },
  descriptor: { type: 'string' },
  keys: { type: 'string' },
  limit: { type: 'string' },
  period: { type: 'string' },
  json: { type: 'boolean' },
} as const;

type BenchValues = ReturnType<typeof parseArgs<{ options: typeof OPTIONS; strict: true }>>['values'];

/** A run as the flags ask for it. */
interface BenchPlan {
  readonly target: LoadTarget;
  readonly concurrency: number;
  readonly threads: number;
  readonly durationMs: number;
  readonly warmupMs: number;
}

/** `sluice bench`. */
export const benchCommand: Command = {
  name: 'bench',
  summary: 'load a running service over gRPC or HTTP; report decisions/s and latency percentiles',
  help: HELP,
  async run(argv, io) {
    let values: BenchValues;
    try {
      values = parseArgs({ args: [...argv], strict: true, options: OPTIONS }).values;
    } catch (error) {
      io.err(`sluice bench: ${(error as Error).message}\n\n${HELP}`);
      return 2;
    }
    let result: BenchResult;
    try {
      const plan = planOf(values);
      await probe(plan.target);
      const measured = await measure(plan, io);
      const { target, concurrency, threads } = plan;
      result = {
        target: target.target,
        protocol: target.protocol,
        endpoint: target.protocol === 'grpc' ? 'ShouldRateLimit' : target.endpoint,
        concurrency,
        connections: target.connections * threads,
        threads,
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

/** The run the flags describe, checked (a UsageError says which flag is wrong). */
function planOf(values: BenchValues): BenchPlan {
  if (values.grpc !== undefined && values.http !== undefined) {
    throw new UsageError('give --grpc or --http, not both');
  }
  const durationMs = parseDuration(values.duration ?? '10s', '--duration');
  const warmupMs = parseDuration(values.warmup ?? '1s', '--warmup');
  if (durationMs < 100) throw new UsageError('--duration: at least 100ms');
  const concurrency = int(values.concurrency, '--concurrency', 64);
  const threads = int(values.threads, '--threads', 1);
  if (threads > concurrency) throw new UsageError('--threads: at most --concurrency');
  const [key = 'remote_address', prefix = ''] = (values.descriptor ?? 'remote_address').split('=', 2);
  const endpoint = (values.endpoint ?? 'json') as 'json' | 'check';
  if (endpoint !== 'json' && endpoint !== 'check') throw new UsageError('--endpoint: json or check');
  const client = values.client ?? 'h2';
  if (client !== 'h2' && client !== 'grpc-js') throw new UsageError('--client: h2 or grpc-js');
  const http = values.http;
  let origin = '';
  if (http !== undefined) {
    try {
      origin = new URL(http).origin;
    } catch {
      throw new UsageError(`--http: '${http}' is not a URL`);
    }
  }
  // Connections are per thread: a connection cannot be shared between threads.
  const connections = int(values.connections, '--connections', http === undefined ? 1 : concurrency);
  const target: LoadTarget = {
    protocol: http === undefined ? 'grpc' : 'http',
    target: http === undefined ? (values.grpc ?? '127.0.0.1:8081') : origin,
    endpoint,
    client,
    connections: Math.max(1, Math.ceil(connections / threads)),
    domain: values.domain ?? 'example',
    key,
    prefix,
    keys: int(values.keys, '--keys', 10_000),
    limit: int(values.limit, '--limit', 100),
    period: values.period ?? '1m',
  };
  return { target, concurrency, threads, durationMs, warmupMs };
}

/** One call first: a wrong target or domain should fail fast with its reason, not after the run. */
async function probe(target: LoadTarget): Promise<void> {
  const caller = createCaller({ ...target, connections: 1 });
  await caller.call(0).then(
    () => caller.close(),
    (error: unknown) => {
      caller.close();
      throw new UsageError(`cannot reach ${target.target}: ${(error as Error).message}`);
    },
  );
}

/** The run itself, on one thread or several, with a progress bar. */
async function measure(plan: BenchPlan, io: Parameters<Command['run']>[1]): Promise<ReturnType<typeof summarize>> {
  const { target, concurrency, threads, durationMs, warmupMs } = plan;
  const bar = progressBar(io, durationMs);
  const startedAt = Date.now() + warmupMs;
  const progress = (count: number) => {
    const elapsed = Date.now() - startedAt;
    if (elapsed >= 0) bar(Math.min(durationMs, elapsed), count);
  };
  let measured: ReturnType<typeof summarize>;
  if (threads === 1) {
    const caller = createCaller(target);
    measured = summarize([await runLoad(caller.call, concurrency, warmupMs, durationMs, progress)]);
    caller.close();
  } else {
    measured = await runLoadThreads({ target, concurrency, warmupMs, durationMs }, threads, progress);
  }
  bar(durationMs, measured.decisions);
  return measured;
}
