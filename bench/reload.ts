/**
 * Reloading a large valid config: how long the event loop stalls while the service parses it, on the
 * main thread (what `loadRules` does) vs in a worker thread (what the service's reload does). The
 * stall is the longest gap between 5 ms timer ticks during the load; the load's own time is reported too.
 *
 *   npm run bench -- reload
 */
import { parseOffThread } from '../packages/server/src/config/parse-off-thread.js';
import { parseRules, type RuleSource } from '../packages/sluice/src/rules/index.js';
import { fmt, table } from './lib/measure.js';

/** A valid file of `n` descriptors, about 100 bytes each. */
function config(n: number): RuleSource {
  const parts = ['domain: big\ndescriptors:\n'];
  for (let i = 0; i < n; i++) {
    parts.push(
      `  - key: user\n    value: user-${i}\n    rate_limit:\n      unit: minute\n      requests_per_unit: ${10 + (i % 100)}\n`,
    );
  }
  return { file: 'big.yaml', text: parts.join('') };
}

/** Runs `load`, returning its wall time and the longest event-loop stall meanwhile, in ms. */
async function measure(load: () => unknown): Promise<{ ms: number; stallMs: number }> {
  let stallMs = 0;
  let last = performance.now();
  const tick = setInterval(() => {
    const now = performance.now();
    stallMs = Math.max(stallMs, now - last - 5);
    last = now;
  }, 5);
  await new Promise((r) => setTimeout(r, 20));
  const started = performance.now();
  const result = await load();
  const ms = performance.now() - started;
  // Let the timer observe a stall that ended with the load.
  await new Promise((r) => setTimeout(r, 20));
  clearInterval(tick);
  if ((result as { ok?: boolean }).ok !== true) throw new Error(`not loaded: ${JSON.stringify(result).slice(0, 300)}`);
  return { ms, stallMs };
}

const rows: (string | number)[][] = [];
for (const n of [10_000, 80_000]) {
  const source = config(n);
  const mb = fmt(source.text.length / 1e6, 1);
  const onThread = await measure(() => parseRules([source]));
  const offThread = await measure(() => parseOffThread([source]));
  rows.push(
    [`${mb} MB, ${fmt(n)} descriptors, main thread (parseRules)`, fmt(onThread.ms), fmt(onThread.stallMs)],
    [
      `${mb} MB, ${fmt(n)} descriptors, worker thread (the service's reload)`,
      fmt(offThread.ms),
      fmt(offThread.stallMs),
    ],
  );
}
console.log('Reloading a valid config: time to load it and the longest event-loop stall meanwhile.\n');
console.log(table(['load', 'time ms', 'longest stall ms'], rows));
