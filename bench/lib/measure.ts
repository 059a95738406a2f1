/** Small measuring tools shared by the benchmarks. Numbers, never assertions. */

/** Runs `op(i)` for i = 0..n-1 synchronously; returns operations per second. */
export function opsPerSecondSync(n: number, op: (i: number) => unknown): number {
  const start = process.hrtime.bigint();
  for (let i = 0; i < n; i++) op(i);
  return n / (Number(process.hrtime.bigint() - start) / 1e9);
}

/** Awaits `op(i)` one after another for i = 0..n-1; returns operations per second. */
export async function opsPerSecondAsync(n: number, op: (i: number) => Promise<unknown>): Promise<number> {
  const start = process.hrtime.bigint();
  for (let i = 0; i < n; i++) await op(i);
  return n / (Number(process.hrtime.bigint() - start) / 1e9);
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
