/** The load generator behind `sluice bench`: sends calls at a rate or as fast as answered, and records latency. */
import { performance } from 'node:perf_hooks';
import { Worker } from 'node:worker_threads';
import type { Call, LoadTarget } from './load-callers.js';

export { type Call, type Caller, createCaller, type LoadTarget } from './load-callers.js';

/** What one load thread measured. */
export interface LoadSample {
  /** Latencies in ms, `count` of them. */
  samples: Float64Array;
  count: number;
  ok: number;
  over: number;
  errors: number;
  firstError?: string;
  measuredMs: number;
}

/** The result of a run, summed over threads. */
export interface LoadSummary {
  durationS: number;
  decisions: number;
  ok: number;
  overLimit: number;
  errors: number;
  decisionsPerS: number;
  latencyMs: { p50: number; p90: number; p99: number; max: number };
  firstError?: string;
}

/**
 * Runs `concurrency` closed-loop callers (each sends a request, waits for the answer, sends the next) for
 * `warmupMs + durationMs`, recording latencies after the warmup. `onProgress` gets the decisions recorded
 * so far, about four times a second.
 */
export async function runLoad(
  call: Call,
  concurrency: number,
  warmupMs: number,
  durationMs: number,
  onProgress: (count: number) => void = () => {},
): Promise<LoadSample> {
  let samples = new Float64Array(1 << 16);
  let count = 0;
  let ok = 0;
  let over = 0;
  let errors = 0;
  let firstError: string | undefined;
  let n = 0;
  const measureAt = performance.now() + warmupMs;
  const endAt = measureAt + durationMs;
  const timer = setInterval(() => onProgress(count), 250);
  const caller = async () => {
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
  await Promise.all(Array.from({ length: concurrency }, caller));
  clearInterval(timer);
  onProgress(count);
  const measuredMs = Math.min(durationMs, performance.now() - measureAt);
  return {
    samples: samples.subarray(0, count),
    count,
    ok,
    over,
    errors,
    measuredMs,
    ...(firstError === undefined ? {} : { firstError }),
  };
}

function percentile(sorted: Float64Array, q: number): number {
  if (sorted.length === 0) return 0;
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1));
  return sorted[i] as number;
}

/** Sums the threads' samples into one result. */
export function summarize(parts: readonly LoadSample[]): LoadSummary {
  const count = parts.reduce((s, p) => s + p.count, 0);
  const all = new Float64Array(count);
  let at = 0;
  for (const p of parts) {
    all.set(p.samples.subarray(0, p.count), at);
    at += p.count;
  }
  all.sort();
  const measuredS = Math.max(...parts.map((p) => p.measuredMs), 1) / 1000;
  const round = (x: number) => Math.round(x * 1000) / 1000;
  const firstError = parts.find((p) => p.firstError !== undefined)?.firstError;
  return {
    durationS: round(measuredS),
    decisions: count,
    ok: parts.reduce((s, p) => s + p.ok, 0),
    overLimit: parts.reduce((s, p) => s + p.over, 0),
    errors: parts.reduce((s, p) => s + p.errors, 0),
    decisionsPerS: Math.round(count / measuredS),
    latencyMs: {
      p50: round(percentile(all, 0.5)),
      p90: round(percentile(all, 0.9)),
      p99: round(percentile(all, 0.99)),
      max: round(percentile(all, 1)),
    },
    ...(firstError === undefined ? {} : { firstError }),
  };
}

/** The message a load thread posts: progress, then its sample. */
export type LoadMessage = { type: 'progress'; count: number } | { type: 'done'; sample: LoadSample };

/** What a load thread is given. */
export interface LoadWorkerData {
  target: LoadTarget;
  concurrency: number;
  warmupMs: number;
  durationMs: number;
}

/**
 * Runs the load on `threads` worker threads (each with its own connections), `concurrency` split among
 * them: one thread's event loop is a ceiling of its own, and a load generator must not be the bottleneck.
 */
export async function runLoadThreads(
  data: Omit<LoadWorkerData, 'concurrency'> & { concurrency: number },
  threads: number,
  onProgress: (count: number) => void,
): Promise<LoadSummary> {
  const counts = new Array<number>(threads).fill(0);
  // Run this file's worker entry in the same flavour as this module (.ts under tsx, .js once built).
  const entry = new URL(`./load-worker${import.meta.url.endsWith('.ts') ? '.ts' : '.js'}`, import.meta.url);
  const parts = await Promise.all(
    Array.from({ length: threads }, (_, i) => {
      const concurrency = Math.floor(data.concurrency / threads) + (i < data.concurrency % threads ? 1 : 0);
      const workerData: LoadWorkerData = { ...data, concurrency: Math.max(1, concurrency) };
      return new Promise<LoadSample>((resolve, reject) => {
        // Built, the entry is plain JavaScript. From the sources (under tsx) the worker registers tsx's
        // loader before importing the TypeScript entry, since a worker's entry is read before any --import.
        const worker = entry.pathname.endsWith('.ts')
          ? new Worker(
              `import('tsx/esm/api').then((tsx) => { tsx.register(); return import(${JSON.stringify(entry.href)}); });`,
              {
                eval: true,
                workerData,
              },
            )
          : new Worker(entry, { workerData });
        worker.on('message', (message: LoadMessage) => {
          if (message.type === 'progress') {
            counts[i] = message.count;
            onProgress(counts.reduce((s, c) => s + c, 0));
          } else resolve(message.sample);
        });
        worker.on('error', reject);
        worker.on('exit', (code) => {
          if (code !== 0) reject(new Error(`load thread ${i} exited with ${code}`));
        });
      });
    }),
  );
  return summarize(parts);
}
