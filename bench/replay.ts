/**
 * `npm run bench -- replay`: how fast `sluice replay` decides captured requests (1,000,000 against a rules file),
 * and that replaying a capture under the rules that produced it reproduces every live outcome, per algorithm;
 * then what capture costs the service's decisions (off, 1 % sample, every decision; bench/lib/capture-cost.ts).
 */

import { captureLive, seededTrace } from '../packages/server/src/tools/replay/capture-live.js';
import { replay } from '../packages/server/src/tools/replay/replay.js';
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

const rows: string[][] = [];
for (const algorithm of ALGORITHMS) {
  // fixed-window carries the headline: a million decisions; the others 200,000 each (the same check).
  const n = algorithm === 'fixed-window' ? 1_000_000 : 200_000;
  const ruleSet = rulesFor(algorithm);
  // 10,000 users, ~1 request a ms: about 6 a minute each on average, bursts over the 20 a minute limit.
  const capture = captureLive(ruleSet, seededTrace(42, n, 10_000, 2));
  const started = process.hrtime.bigint();
  const result = await replay(capture, ruleSet);
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  const mismatches = result.total.newlyAdmitted + result.total.newlyRejected;
  rows.push([
    algorithm,
    n.toLocaleString('en-US'),
    `${seconds.toFixed(2)} s`,
    `${Math.round(n / seconds).toLocaleString('en-US')}/s`,
    String(result.total.baselineRejected),
    String(mismatches),
  ]);
  if (mismatches !== 0) process.exitCode = 1;
}
console.log(table(['algorithm', 'decisions replayed', 'time', 'rate', 'rejected live', 'mismatches'], rows));
console.log('\nReplayed from records in memory (file reading not included); the capture holds every decision.');

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
