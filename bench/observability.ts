/**
 * What observing decisions costs a limiter (memory store, one hot key): nobody listening (the
 * `@opentelemetry/api` package installed, no SDK registered), a no-op `sluice:decision` subscriber, and
 * an OpenTelemetry SDK recording every decision (a MeterProvider's counter; a TracerProvider registered,
 * no span active, so no span event). Each subject runs in a process of its own; rates are per CPU-second
 * (bench/lib/measure.ts).
 *
 *   npm run bench -- observability
 *   node --expose-gc --import tsx bench/observability.ts
 */
import { spawnSync } from 'node:child_process';
import diagnostics from 'node:diagnostics_channel';
import { fileURLToPath } from 'node:url';
import { context, metrics, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import {
  AggregationTemporality,
  InMemoryMetricExporter,
  MeterProvider,
  PeriodicExportingMetricReader,
} from '@opentelemetry/sdk-metrics';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { createLimiter } from '../packages/sluice/src/index.js';
import { connectOpenTelemetry } from '../packages/sluice/src/limiter/opentelemetry.js';
import { fmt, opsPerSecondAsync, opsPerSecondSync, table } from './lib/measure.js';

const OPS = Number(process.env.BENCH_HOT_OPS ?? 2_000_000);
const SUBJECTS = ['none', 'channel', 'sdk'] as const;
type Subject = (typeof SUBJECTS)[number];
const LABELS: Record<Subject, string> = {
  none: 'no subscriber (OTel API installed, no SDK)',
  channel: 'a no-op sluice:decision subscriber',
  sdk: 'OTel SDK registered: every decision counted',
};

interface Row {
  sync: number;
  await: number;
}

/** Registers a real SDK (metrics read into memory once an hour, spans kept in memory) and connects sluice to it. */
async function registerSdk(): Promise<void> {
  const reader = new PeriodicExportingMetricReader({
    exporter: new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE),
    exportIntervalMillis: 3_600_000,
  });
  metrics.setGlobalMeterProvider(new MeterProvider({ readers: [reader] }));
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  trace.setGlobalTracerProvider(
    new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(new InMemorySpanExporter())] }),
  );
  await connectOpenTelemetry();
}

async function measure(subject: Subject): Promise<Row> {
  if (subject === 'channel') diagnostics.subscribe('sluice:decision', () => {});
  if (subject === 'sdk') await registerSdk();
  const limiter = createLimiter({ name: 'api', algorithm: 'token-bucket', limit: 1e8, period: '1h' });
  opsPerSecondSync(200_000, () => limiter.checkSync('hot'));
  const sync = opsPerSecondSync(OPS, () => limiter.checkSync('hot'));
  await opsPerSecondAsync(100_000, () => limiter.check('hot'));
  return { sync, await: await opsPerSecondAsync(OPS / 2, () => limiter.check('hot')) };
}

function inChild(subject: Subject): Row {
  const args = ['--expose-gc', '--import', 'tsx', fileURLToPath(import.meta.url), subject];
  const run = spawnSync(process.execPath, args, { encoding: 'utf8', maxBuffer: 1 << 20 });
  if (run.status !== 0) throw new Error(`bench/observability.ts ${subject} failed:\n${run.stderr}`);
  return JSON.parse(run.stdout.trim().split('\n').pop() as string) as Row;
}

async function main() {
  const subject = process.argv[2] as Subject | undefined;
  if (subject !== undefined) {
    console.log(JSON.stringify(await measure(subject)));
    process.exit(0);
  }
  const rows = SUBJECTS.map((s) => [s, inChild(s)] as const);
  const none = rows[0]?.[1] as Row;
  const ns = (rate: number, base: number) => `${fmt(1e9 / rate - 1e9 / base)} ns`;
  console.log(
    `\n### Observing decisions (token bucket, memory store, one hot key; ${fmt(OPS)} checks per CPU-second)\n`,
  );
  console.log(
    table(
      ['', 'checkSync (checks/s)', 'await check (checks/s)', 'added per checkSync', 'added per await check'],
      rows.map(([s, r]) => [
        LABELS[s],
        fmt(r.sync),
        fmt(r.await),
        s === 'none' ? '—' : ns(r.sync, none.sync),
        s === 'none' ? '—' : ns(r.await, none.await),
      ]),
    ),
  );
}

await main();
