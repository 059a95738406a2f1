/** The capture's metrics, read from its writer's stats when scraped: records written and dropped, bytes on disk. */
import { Counter, Gauge, type Registry } from 'prom-client';
import type { CaptureWriterStats } from './capture-writer.js';

/** Registers `sluice_capture_records_total{result}` and `sluice_capture_bytes` in `registry`. */
export function registerCaptureMetrics(registry: Registry, stats: () => CaptureWriterStats): void {
  const last = { written: 0, dropped: 0 };
  new Counter({
    name: 'sluice_capture_records_total',
    help: 'Sampled decisions the capture wrote, or dropped (queue full: a slow disk; a failed write; too long).',
    labelNames: ['result'] as const,
    registers: [registry],
    collect() {
      const now = stats();
      for (const result of ['written', 'dropped'] as const) {
        this.inc({ result }, now[result] - last[result]);
        last[result] = now[result];
      }
    },
  });
  new Gauge({
    name: 'sluice_capture_bytes',
    help: 'Bytes of capture files in the capture directory (bounded by --capture-max-bytes).',
    registers: [registry],
    collect() {
      this.set(stats().bytes);
    },
  });
}
