/** Small measuring tools shared by the benchmarks. Numbers, never assertions. */
import { PerformanceObserver } from 'node:perf_hooks';
import { getHeapStatistics } from 'node:v8';

/**
 * CPU time this process used since `start` (user + system, all its threads: GC included), in seconds.
 * Rates are per CPU-second rather than per wall-clock second: on a shared machine, time spent waiting
 * for a core is not the code's cost, and wall-clock rates of processes run one after another then
 * differ by whatever else ran meanwhile.
 */
function cpuSecondsSince(start: NodeJS.CpuUsage): number {
  const used = process.cpuUsage(start);
  return (used.user + used.system) / 1e6;
}

/** Runs `op(i)` for i = 0..n-1 synchronously; returns operations per CPU-second. */
export function opsPerSecondSync(n: number, op: (i: number) => unknown): number {
  const start = process.cpuUsage();
  for (let i = 0; i < n; i++) op(i);
  return n / cpuSecondsSince(start);
}

/** Awaits `op(i)` one after another for i = 0..n-1; returns operations per CPU-second. */
export async function opsPerSecondAsync(n: number, op: (i: number) => Promise<unknown>): Promise<number> {
  const start = process.cpuUsage();
  for (let i = 0; i < n; i++) await op(i);
  return n / cpuSecondsSince(start);
}

/**
 * Bytes of JS heap that each of `n` awaited calls of `op` allocates (promises, reactions, results:
 * garbage included). Exact only when nothing is collected meanwhile — run it in a process whose young
 * generation holds all `n` calls (node --min-semi-space-size=128 --max-semi-space-size=128), after a
 * warm-up, so that the code measured is the optimized code; NaN when a collection ran all the same.
 */
export async function allocatedBytesPerCallAsync(n: number, op: () => Promise<unknown>): Promise<number> {
  let collections = 0;
  const observer = new PerformanceObserver((list) => {
    collections += list.getEntries().length;
  });
  observer.observe({ entryTypes: ['gc'] });
  const before = getHeapStatistics().used_heap_size;
  for (let i = 0; i < n; i++) await op();
  const after = getHeapStatistics().used_heap_size;
  await new Promise((resolve) => setTimeout(resolve, 50)); // gc entries are delivered after the fact
  observer.disconnect();
  return collections === 0 ? (after - before) / n : Number.NaN;
}

/** Heap (JS heap plus ArrayBuffer backing stores) after a full GC. Needs `--expose-gc`. */
export function retainedBytes(): number {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (!gc) throw new Error('run with node --expose-gc');
  gc();
  gc();
  const m = process.memoryUsage();
  return m.heapUsed + m.arrayBuffers;
}

/** Formats a number with thousands separators. */
export const fmt = (n: number, digits = 0) =>
  n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });

/** Prints a markdown table. */
export function table(head: readonly string[], rows: readonly (readonly (string | number)[])[]): string {
  const line = (cells: readonly (string | number)[]) => `| ${cells.join(' | ')} |`;
  return [line(head), line(head.map(() => '---')), ...rows.map(line)].join('\n');
}

/** 0..n-1 in a random order. */
export function shuffled(n: number): number[] {
  const order = Array.from({ length: n }, (_, i) => i);
  for (let i = n - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [order[i], order[j]] = [order[j] as number, order[i] as number];
  }
  return order;
}
