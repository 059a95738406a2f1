/**
 * The overload benchmark's load generator, in a process of its own so that its work does not delay the
 * proxy it measures: runs the load given on the command line (open loop at a rate, or closed-loop callers
 * when it names `callers`) and prints the samples as JSON.
 *
 *   node overload-client.js '{"url":…,"ratePerS":…,"durationMs":…,"criticalShare":…,"timeoutMs":…}'
 */
import { type Callers, runCallers } from './overload-callers.js';
import { type Load, offerLoad } from './overload-load.js';

const load = JSON.parse(process.argv[2] ?? '{}') as Load | Callers;
const samples = 'callers' in load ? await runCallers(load) : await offerLoad(load, () => {});
// Compact rows: [atMs, critical, status, ms].
process.stdout.write(
  JSON.stringify(samples.map((s) => [Math.round(s.atMs), s.critical ? 1 : 0, s.status, Math.round(s.ms * 10) / 10])),
);
