/**
 * `npm run bench -- replay`: how fast `sluice replay` decides captured requests (1,000,000 against a rules file,
 * read from an NDJSON file as the service writes it, through the command's own reading loop), and that
 * replaying a capture under the rules that produced it reproduces every live outcome, per algorithm; then what
 * capture costs the service's decisions (off, 1 % sample, every decision; bench/lib/capture-cost.ts).
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { captureLive, seededTrace } from '../packages/server/src/tools/replay/capture-live.js';
import { replayFiles } from '../packages/server/src/tools/replay/replay-files.js';
import { parseRules, type RuleSet } from '../packages/sluice/src/rules/index.js';
import { measureCaptureCost } from './lib/capture-cost.js';
import { table } from './lib/measure.js';

const ALGORITHMS = ['fixed-window', 'sliding-window', 'sliding-log', 'token-bucket', 'leaky-bucket', 'gcra'];

function rulesFor(algorithm: string): RuleSet {
  const burst = algorithm.endsWith('bucket') || algorithm === 'gcra' ? '\n      burst: 20' : '';
  const text = `domain: api\ndescriptors:\n  - key: user\n    rate_limit:\n      name: per-user\n      unit: minute\n      requests_per_unit: 20\n      algorithm: ${algorithm}${burst}\n`;
  const loaded = parseRules([{ file: 'bench.yaml', text }]);
  if (!loaded.ok) throw new Error(JSON.stringify(loaded.issues));
  return loaded.ruleSet;
}

const cpuSeconds = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1e6;
};

const dir = mkdtempSync(join(tmpdir(), 'sluice-bench-replay-'));
const rows: string[][] = [];
const loadBefore = loadavg()[0] ?? 0;
try {
  for (const algorithm of ALGORITHMS) {
    // fixed-window carries the headline: a million decisions; the others 200,000 each (the same check).
    const n = algorithm === 'fixed-window' ? 1_000_000 : 200_000;
    const ruleSet = rulesFor(algorithm);
    // 10,000 users, ~1 request a ms: about 6 a minute each on average, bursts over the 20 a minute limit.
    const capture = captureLive(ruleSet, seededTrace(42, n, 10_000, 2));
    // The file as `sluice serve --capture` writes it (the rule and the source included).
    const file = join(dir, `${algorithm}.ndjson`);
    writeFileSync(file, `${capture.map((r) => JSON.stringify({ ...r, rule: 'per-user', src: 'json' })).join('\n')}\n`);
    capture.length = 0;
    let problems = 0;
    const cpu = cpuSeconds();
    const started = process.hrtime.bigint();
    const { result } = await replayFiles([file], { candidate: ruleSet, onProblem: () => problems++ });
    const seconds = Number(process.hrtime.bigint() - started) / 1e9;
    const cpuUsed = cpuSeconds() - cpu;
    const mismatches = result.total.newlyAdmitted + result.total.newlyRejected;
    rows.push([
      algorithm,
      n.toLocaleString('en-US'),
      `${seconds.toFixed(2)} s`,
      `${cpuUsed.toFixed(2)} s`,
      `${Math.round(n / seconds).toLocaleString('en-US')}/s`,
      String(result.total.baselineRejected),
      String(mismatches + problems),
    ]);
    if (mismatches + problems !== 0 || result.requests !== n) process.exitCode = 1;
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
console.log(table(['algorithm', 'decisions replayed', 'time', 'cpu', 'rate', 'rejected live', 'mismatches'], rows));
console.log(
  // The time is the wall clock's; the cpu column is this process's own (user + system): on a loaded machine
  // the time grows with the load, the cpu much less.
  `\nReplayed from NDJSON files through sluice replay's reading loop (tools/replay/replay-files.ts), every decision captured; load average ${loadBefore.toFixed(1)} -> ${(loadavg()[0] ?? 0).toFixed(1)} on ${availableParallelism()} cores.`,
);

// Capture on vs off, same run: the service's decider at a 1 % sample must keep >= 95 % of its decisions/s.
const cost = await measureCaptureCost();
const off = cost.rates.off;
const capRows = Object.entries(cost.rates).map(([name, rate]) => [
  name,
  `${Math.round(rate).toLocaleString('en-US')}/s`,
  `${(((off - rate) / off) * 100).toFixed(1)} %`,
]);
console.log(`\n${table(['capture', 'decisions (decider, memory store)', 'cost'], capRows)}`);
console.log(`1 % sample: ${cost.written} records written, ${cost.dropped} dropped.`);
if ((off - cost.rates['sample 0.01']) / off > 0.05) process.exitCode = 1;
