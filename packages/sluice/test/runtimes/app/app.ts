/**
 * The app every runtime serves in the runtime tests: Hono, rate limited by client address through
 * `sluice/hono`, its counters in a shared `sluice serve` through `sluice/remote`. Only runtime-neutral
 * code here; each runtime's entry file serves it its own way.
 */
import { Hono } from 'hono';
import { rateLimit } from 'sluice/hono';
import { createRemoteStore } from 'sluice/remote';

export function makeApp(runtime: string, url: string, limit: number): Hono {
  const store = createRemoteStore({ url, timeoutMs: 10_000 });
  const app = new Hono();
  app.use(rateLimit({ name: 'shared', limit, period: '1h', store, fail: 'closed' }));
  app.get('/', (c) => c.json({ runtime }));
  return app;
}
