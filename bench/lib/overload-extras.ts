/**
 * The overload benchmark's two smaller parts: client throttling against a dead backend, and what an
 * adaptive acquire + release costs beside the fixed concurrency limiter's.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createAdaptiveLimiter } from '../../packages/sluice/src/adaptive/index.js';
import { createClient } from '../../packages/sluice/src/client/index.js';
import { createConcurrencyLimiter } from '../../packages/sluice/src/limiter/concurrency-limiter.js';
import { fmt, opsPerSecondAsync, opsPerSecondSync } from './measure.js';

/** Ten clients sending 50 requests a second each for 2 s to a dead backend (connection refused). */
export async function throttling(): Promise<string[][]> {
  const gone = createServer();
  await new Promise<void>((r) => gone.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(gone.address() as AddressInfo).port}/`;
  await new Promise((r) => gone.close(r));
  const rows: string[][] = [];
  for (const throttled of [false, true]) {
    let sent = 0;
    const counting: typeof fetch = (input, init) => {
      sent++;
      return fetch(input, init);
    };
    const clients = Array.from({ length: 10 }, () =>
      createClient({ fetch: counting, retries: 0, ...(throttled ? { adaptiveThrottle: true } : {}) }),
    );
    let attempts = 0;
    const start = performance.now();
    while (performance.now() - start < 2000) {
      await Promise.all(clients.map((c) => c.fetch(url).catch(() => {})));
      attempts += clients.length;
      await new Promise((r) => setTimeout(r, 20));
    }
    rows.push([throttled ? 'adaptiveThrottle: true' : 'no throttling', fmt(attempts), fmt(sent), '0']);
  }
  return rows;
}

/** acquire + release per CPU-second: the adaptive limiter vs the fixed concurrency limiter. */
export async function overhead(): Promise<string[][]> {
  const limiter = createAdaptiveLimiter({ algorithm: 'gradient2', initialLimit: 100, maxLimit: 1000 });
  const n = 1_000_000;
  opsPerSecondSync(n / 10, () => {
    const p = limiter.tryAcquire();
    if (p.allowed) p.release();
  });
  const adaptiveSync = opsPerSecondSync(n, () => {
    const p = limiter.tryAcquire();
    if (p.allowed) p.release();
  });
  const adaptiveAsync = await opsPerSecondAsync(n / 4, async () => {
    const p = await limiter.acquire();
    if (p.allowed) p.release();
  });
  const fixed = createConcurrencyLimiter({ limit: 100 });
  const fixedAsync = await opsPerSecondAsync(n / 4, async () => {
    const d = await fixed.acquire('k');
    if (d.lease) await fixed.release(d.lease);
  });
  return [
    ['adaptive: tryAcquire + release (sync)', fmt(adaptiveSync), fmt(adaptiveSync / fixedAsync, 1)],
    ['adaptive: await acquire + release', fmt(adaptiveAsync), fmt(adaptiveAsync / fixedAsync, 1)],
    ['createConcurrencyLimiter: acquire + release (memory)', fmt(fixedAsync), '1.0'],
  ];
}
