/**
 * `sluice simulate`: run a trace (synthetic or CSV) through every algorithm on a virtual clock and report or chart it.
 */
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { basename, dirname } from 'node:path';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { ALGORITHMS, type AlgorithmName, isAlgorithmName, isSluiceError, parseDuration, SluiceError } from 'sluice';
import {
  formatOverloadTable,
  formatRegionsTable,
  formatTable,
  generateTrace,
  isTraceName,
  parseCsvTrace,
  REGION_MODES,
  type RegionMode,
  renderHtmlReport,
  renderOverloadSvg,
  renderRegionsHtml,
  renderRegionsSvg,
  renderRunSvg,
  renderSimulationSvg,
  SPLITS,
  type Split,
  simulate,
  simulateOverload,
  simulateRegions,
  summarize,
  TRACE_NAMES,
  type Trace,
} from '../../tools/simulate/index.js';
import type { Command } from '../command.js';

const HELP = `usage: sluice simulate [options]

Runs a traffic trace through the rate-limit algorithms with simulated time (instant: nothing sleeps),
prints a table of what each one admitted, and optionally writes charts of admitted vs rejected over time.
It is the way to see why a fixed window lets 2 × limit through at a window boundary.

options:
  --trace NAME|FILE.csv  steady | bursty | boundary | poisson, or a CSV file of requests (default: boundary)
  --algorithms LIST      all (the default), or a comma-separated list of: fixed-window, sliding-log,
                         sliding-window, token-bucket, leaky-bucket, gcra
  --limit N              requests per period (default: 10)
  --period D             the period: 500ms, 1s, 1m, ... (default: 1s)
  --burst B              capacity of token-bucket, leaky-bucket and gcra (default: the limit)
  --duration D           length of a generated trace, e.g. 30s, 1h
                         (default: steady 10, bursty 12, boundary 9, poisson 100 periods)
  --load F               rate of the steady and poisson traces as a multiple of the limit
                         (default: 1.5 for steady, 1 for poisson)
  --seed N               seed of the random traces, bursty and poisson (default: 1)
  --out FILE             write FILE.html (table and one chart per algorithm, self-contained) or FILE.svg
                         (the charts stacked; one algorithm gives one chart)
  --json                 print the table as JSON instead of text
  -h, --help             show this help

several regions (the accuracy report of sluice/multi-region):
  --regions N|LIST       split the trace across N regions (2-8), or the regions named (eu,us,ap), and
                         run it through the multi-region store in each mode, with simulated time
  --split S              even | skewed (90 % in the first region) | moving (all of it in one region,
                         moving to the next every --move-every periods) (default: even)
  --move-every N         periods the moving load stays in a region (default: 3)
  --latency D            one-way latency between regions (default: 50ms)
  --sync-interval D      the store's syncIntervalMs (default: 1s)
  --modes LIST           eventual, escrow, write-to-all (the baseline: every request written to every
                         region, answered by the first reply, as @upstash/ratelimit) (default: all three)
  --redis URL            a Redis whose databases 0..N-1 the regions use, flushed first (default: REDIS_URL)
  With --regions, --algorithms names one algorithm (default: fixed-window).

overload (adaptive concurrency limits, docs/overload.md):
  --overload             a model service under load in front of no limiter, a fixed concurrency limit
                         and each adaptive algorithm (gradient2, vegas, aimd); prints goodput, the
                         critical requests' success and the limit over time (--out FILE.svg: a chart)
  --capacity N           requests the service runs at once (default: 32, at most 128)
  --service-time D       time of one request when not queued (default: 10ms)
  --slowdown F           the service time is multiplied by F half way through (default: 5)
  --critical F           share of requests that are critical (default: 0.2)
  --initial-limit N      the fixed limit, and the adaptive limits' start (default: 20)
  With --overload, --load is the offered load as a multiple of the capacity (default: 3, at most 10) and --duration
  the run's length (default: 30s).

traces:
  steady    evenly spaced requests at 1.5 × the limit
  bursty    light random traffic with a burst of 2 × limit in every fourth period
  boundary  limit requests at the end of a window and limit more at the start of the next
  poisson   random arrivals at the limit (seeded, so the numbers reproduce)
  FILE.csv  one request per line: timestamp[,cost]; the timestamp in ms or ISO 8601; an optional
            header line, blank lines and # comments are skipped; lines are sorted by time

table:
  "most admitted in one period" is the largest number of units admitted in any window (t - period, t];
  a fixed window reaches 2 × limit on the boundary trace, a sliding log never exceeds the limit.
  For sliding-window, "vs exact sliding log" counts decisions that differ from what an exact log of the
  same admitted requests would decide.

examples:
  sluice simulate
  sluice simulate --trace poisson --algorithms sliding-window --duration 10000s
  sluice simulate --trace bursty --algorithms token-bucket,leaky-bucket --burst 5 --out report.html
  sluice simulate --trace requests.csv --limit 100 --period 1m --out chart.svg
  sluice simulate --regions eu,us,ap --split moving --trace steady --load 2 --limit 100 --period 10s \
    --duration 2m --redis redis://127.0.0.1:6379 --out regions.svg

exit status: 0 done, 1 the trace file could not be read, 2 bad options`;

const SEE_HELP = "Run 'sluice simulate --help' for the options.";

/** Options after parsing and validation. */
interface SimulateArgs {
  trace: string;
  algorithms: AlgorithmName[];
  limit: number;
  periodMs: number;
  burst?: number;
  durationMs?: number;
  load?: number;
  seed: number;
  out?: string;
  json: boolean;
  regions?: RegionArgs;
  overload?: OverloadArgs;
}

/** The --overload options, parsed. */
interface OverloadArgs {
  capacity: number;
  serviceMs: number;
  slowdown: number;
  critical: number;
  initialLimit: number;
}

/** The --regions options, parsed. */
interface RegionArgs {
  names: string[];
  split: Split;
  movePeriods: number;
  latencyMs: number;
  syncIntervalMs: number;
  modes: RegionMode[];
  redis: string;
}

/** `sluice simulate`: runs a trace through the algorithms and reports a table and charts. */
export const simulateCommand: Command = {
  name: 'simulate',
  summary: 'run a traffic trace through every algorithm; print a table, write SVG/HTML charts',
  help: HELP,
  async run(argv, io) {
    let args: SimulateArgs;
    try {
      args = parseSimulateArgs(argv);
    } catch (error) {
      io.err(`sluice simulate: ${messageOf(error)}\n${SEE_HELP}`);
      return 2;
    }
    if (args.overload !== undefined) return runOverload(args, args.overload, io);
    let trace: Trace;
    try {
      trace = await loadTrace(args);
    } catch (error) {
      if (isSluiceError(error, 'ERR_SLUICE_INVALID_TRACE') || isFileError(error)) {
        io.err(`sluice simulate: ${messageOf(error)}`);
        return 1;
      }
      io.err(`sluice simulate: ${messageOf(error)}\n${SEE_HELP}`);
      return 2;
    }
    if (args.regions !== undefined) return runRegions(args, args.regions, trace, io);
    const started = performance.now();
    let shown = started;
    const result = simulate({
      trace,
      algorithms: args.algorithms,
      limit: args.limit,
      periodMs: args.periodMs,
      ...(args.burst === undefined ? {} : { burst: args.burst }),
      onProgress(done, total) {
        // Only long runs report progress, at most once a second.
        const now = performance.now();
        if (now - shown >= 1000) {
          shown = now;
          io.err(`simulating: ${Math.floor((done / total) * 100)}% of ${total} decisions`);
        }
      },
    });
    const summary = summarize(result);
    io.out(args.json ? JSON.stringify(summary, null, 2) : formatTable(summary));
    if (args.out !== undefined) {
      const html = /\.html?$/i.test(args.out);
      const only = result.runs.length === 1 ? result.runs[0] : undefined;
      const text = html
        ? renderHtmlReport(result)
        : only !== undefined
          ? renderRunSvg(result, only)
          : renderSimulationSvg(result);
      await mkdir(dirname(args.out), { recursive: true });
      await writeFile(args.out, text);
      io.err(`wrote ${args.out}`);
    }
    return 0;
  },
};

/** Parses and validates the arguments; every error names the option. */
export function parseSimulateArgs(argv: readonly string[]): SimulateArgs {
  const { values, positionals } = parseArgs({
    args: [...argv],
    strict: true,
    allowPositionals: true,
    options: {
      trace: { type: 'string', default: 'boundary' },
      algorithms: { type: 'string', default: 'all' },
      limit: { type: 'string', default: '10' },
      period: { type: 'string', default: '1s' },
      burst: { type: 'string' },
      duration: { type: 'string' },
      load: { type: 'string' },
      seed: { type: 'string', default: '1' },
      out: { type: 'string' },
      json: { type: 'boolean', default: false },
      regions: { type: 'string' },
      split: { type: 'string', default: 'even' },
      'move-every': { type: 'string', default: '3' },
      latency: { type: 'string', default: '50ms' },
      'sync-interval': { type: 'string', default: '1s' },
      modes: { type: 'string', default: REGION_MODES.join(',') },
      redis: { type: 'string' },
      overload: { type: 'boolean', default: false },
      capacity: { type: 'string', default: '32' },
      'service-time': { type: 'string', default: '10ms' },
      slowdown: { type: 'string', default: '5' },
      critical: { type: 'string', default: '0.2' },
      'initial-limit': { type: 'string', default: '20' },
    },
  });
  if (positionals.length > 0) throw usage('', `unexpected argument '${positionals[0]}'`);
  const limit = wholeNumber(values.limit, '--limit', 1);
  const periodMs = parseDuration(values.period, '--period');
  if (periodMs < 1) throw usage('--period', 'must be at least 1ms');
  const args: SimulateArgs = {
    trace: values.trace,
    algorithms: parseAlgorithms(values.algorithms),
    limit,
    periodMs,
    seed: wholeNumber(values.seed, '--seed', 0),
    json: values.json,
  };
  if (values.burst !== undefined) args.burst = wholeNumber(values.burst, '--burst', 1);
  if (values.duration !== undefined) {
    args.durationMs = parseDuration(values.duration, '--duration');
    if (args.durationMs < 1) throw usage('--duration', 'must be at least 1ms');
  }
  if (values.load !== undefined) {
    const load = Number(values.load);
    if (!(load > 0) || !Number.isFinite(load)) throw usage('--load', `'${values.load}' is not a positive number`);
    args.load = load;
  }
  if (values.out !== undefined) {
    if (!/\.(html?|svg)$/i.test(values.out)) throw usage('--out', `'${values.out}' must end in .html or .svg`);
    args.out = values.out;
  }
  if (values.overload) {
    args.overload = parseOverloadArgs(values);
    // The model's work grows with load × capacity (every request is simulated): past these it runs for minutes.
    if (args.load !== undefined && args.load > MAX_OVERLOAD_LOAD)
      throw usage('--load', `at most ${MAX_OVERLOAD_LOAD} with --overload (got ${args.load})`);
  }
  if (values.regions !== undefined) {
    args.regions = parseRegionArgs(values);
    if (values.algorithms.trim() === 'all') args.algorithms = ['fixed-window'];
    if (args.algorithms.length !== 1) throw usage('--algorithms', 'with --regions, name one algorithm');
  }
  return args;
}

function parseRegionArgs(values: Record<string, string | boolean | undefined>): RegionArgs {
  const raw = String(values.regions).trim();
  const names = /^\d+$/.test(raw)
    ? Array.from({ length: Number(raw) }, (_, i) => `region-${i + 1}`)
    : raw
        .split(',')
        .map((s) => s.trim())
        .filter((s) => s !== '');
  if (names.length < 2 || names.length > 8) throw usage('--regions', `2 to 8 regions, got ${names.length}`);
  if (new Set(names).size !== names.length) throw usage('--regions', 'region names must differ');
  for (const name of names) {
    if (!/^[A-Za-z0-9_.-]{1,64}$/.test(name)) throw usage('--regions', `'${name}': use letters, digits, '_', '.', '-'`);
  }
  const split = String(values.split);
  if (!(SPLITS as readonly string[]).includes(split))
    throw usage('--split', `'${split}' is not one of ${SPLITS.join(', ')}`);
  const modes = String(values.modes)
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
  for (const m of modes) {
    if (!(REGION_MODES as readonly string[]).includes(m)) {
      throw usage('--modes', `'${m}' is not one of ${REGION_MODES.join(', ')}`);
    }
  }
  if (modes.length === 0) throw usage('--modes', 'name at least one mode');
  const latencyMs = parseDuration(String(values.latency), '--latency');
  const syncIntervalMs = parseDuration(String(values['sync-interval']), '--sync-interval');
  if (syncIntervalMs < 10) throw usage('--sync-interval', 'must be at least 10ms');
  const redis = (values.redis as string | undefined) ?? process.env.REDIS_URL;
  if (redis === undefined || redis === '') {
    throw usage('--redis', 'the regions run the real multi-region store: give a Redis URL (or set REDIS_URL)');
  }
  return {
    names,
    split: split as Split,
    movePeriods: wholeNumber(String(values['move-every']), '--move-every', 1),
    latencyMs,
    syncIntervalMs,
    modes: [...new Set(modes)] as RegionMode[],
    redis,
  };
}

/** `--regions`: the trace through the multi-region store in each mode; the accuracy table and chart. */
async function runRegions(
  args: SimulateArgs,
  r: RegionArgs,
  trace: Trace,
  io: Parameters<Command['run']>[1],
): Promise<number> {
  const { Redis } = await import('ioredis');
  const clients = r.names.map(
    (_, db) => new Redis(r.redis, { db, lazyConnect: false, maxRetriesPerRequest: 1, enableOfflineQueue: true }),
  );
  try {
    let shown = performance.now();
    const result = await simulateRegions({
      trace,
      policy: {
        algorithm: args.algorithms[0] as AlgorithmName,
        limit: args.limit,
        period: args.periodMs,
        ...(args.burst === undefined ? {} : { burst: args.burst }),
      },
      regions: r.names,
      split: r.split,
      movePeriods: r.movePeriods,
      latencyMs: r.latencyMs,
      syncIntervalMs: r.syncIntervalMs,
      modes: r.modes,
      redis: (i) => clients[i] as (typeof clients)[number],
      onProgress(done, total) {
        const now = performance.now();
        if (now - shown >= 1000) {
          shown = now;
          io.err(`simulating: ${Math.floor((done / total) * 100)}% of ${total} decisions`);
        }
      },
    });
    io.out(args.json ? JSON.stringify(result.runs, null, 2) : formatRegionsTable(result));
    if (args.out !== undefined) {
      const text = /\.html?$/i.test(args.out) ? renderRegionsHtml(result) : renderRegionsSvg(result);
      await mkdir(dirname(args.out), { recursive: true });
      await writeFile(args.out, text);
      io.err(`wrote ${args.out}`);
    }
    return 0;
  } catch (error) {
    io.err(`sluice simulate: ${messageOf(error)}`);
    return 1;
  } finally {
    for (const c of clients) c.disconnect();
  }
}

function parseAlgorithms(value: string): AlgorithmName[] {
  if (value.trim() === 'all') return [...ALGORITHMS];
  const names = value
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
  if (names.length === 0) throw usage('--algorithms', 'name at least one algorithm, or all');
  for (const name of names) {
    if (!isAlgorithmName(name)) {
      throw usage('--algorithms', `'${name}' is not an algorithm; use all or some of ${ALGORITHMS.join(', ')}`);
    }
  }
  return [...new Set(names as AlgorithmName[])];
}

async function loadTrace(args: SimulateArgs): Promise<Trace> {
  if (isTraceName(args.trace)) {
    return generateTrace(args.trace, {
      limit: args.limit,
      periodMs: args.periodMs,
      seed: args.seed,
      ...(args.durationMs === undefined ? {} : { durationMs: args.durationMs }),
      ...(args.load === undefined ? {} : { load: args.load }),
    });
  }
  let text: string;
  try {
    text = await readFile(args.trace, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' && !/[./\\]/.test(args.trace)) {
      throw usage('--trace', `'${args.trace}' is neither a trace (${TRACE_NAMES.join(', ')}) nor a file`);
    }
    throw error;
  }
  return parseCsvTrace(text, basename(args.trace));
}

function wholeNumber(value: string, option: string, min: number): number {
  const n = Number(value);
  if (!/^\d+$/.test(value.trim()) || !Number.isSafeInteger(n) || n < min) {
    throw usage(option, `'${value}' is not a whole number ≥ ${min}`);
  }
  return n;
}

function usage(option: string, message: string): SluiceError {
  return new SluiceError('ERR_SLUICE_INVALID_OPTION', option ? `${option}: ${message}` : message, {
    ...(option ? { option } : {}),
  });
}

function isFileError(error: unknown): boolean {
  return typeof (error as NodeJS.ErrnoException)?.code === 'string' && !isSluiceError(error);
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** Most --load and --capacity with --overload: at the defaults otherwise, about half a minute each. */
const MAX_OVERLOAD_LOAD = 10;
const MAX_OVERLOAD_CAPACITY = 128;

function atMost(n: number, max: number, option: string): number {
  if (n > max) throw usage(option, `at most ${max} with --overload (got ${n})`);
  return n;
}

/** The --overload flags; every error names its flag. */
function parseOverloadArgs(values: Record<string, string | boolean | undefined>): OverloadArgs {
  const number = (flag: string, min: number, max: number) => {
    const n = Number(values[flag]);
    if (!(n >= min && n <= max)) throw usage(`--${flag}`, `'${String(values[flag])}' is not between ${min} and ${max}`);
    return n;
  };
  const serviceMs = parseDuration(values['service-time'] as string, '--service-time');
  if (serviceMs < 1) throw usage('--service-time', 'must be at least 1ms');
  return {
    capacity: atMost(wholeNumber(values.capacity as string, '--capacity', 1), MAX_OVERLOAD_CAPACITY, '--capacity'),
    serviceMs,
    slowdown: number('slowdown', 0.1, 100),
    critical: number('critical', 0, 0.9),
    initialLimit: wholeNumber(values['initial-limit'] as string, '--initial-limit', 1),
  };
}

/** `--overload`: the model service in front of each limiter; a table, and a chart with --out FILE.svg. */
async function runOverload(args: SimulateArgs, overload: OverloadArgs, io: Parameters<Command['run']>[1]) {
  const options = { ...overload, load: args.load ?? 3, durationMs: args.durationMs ?? 30_000 };
  if (options.durationMs > 600_000) {
    io.err(`sluice simulate: --duration: at most 10m with --overload\n${SEE_HELP}`);
    return 2;
  }
  const rows = simulateOverload(options);
  io.out(args.json ? JSON.stringify({ options, rows }, null, 2) : formatOverloadTable(options, rows));
  if (args.out !== undefined) {
    if (!/\.svg$/i.test(args.out)) {
      io.err(`sluice simulate: --out: with --overload, write a .svg\n${SEE_HELP}`);
      return 2;
    }
    await mkdir(dirname(args.out), { recursive: true });
    await writeFile(args.out, renderOverloadSvg(options, rows));
    io.err(`wrote ${args.out}`);
  }
  return 0;
}
