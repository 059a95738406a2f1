/**
 * The overload benchmark's load generator, in a process of its own so that its work does not delay the
 * proxy it measures: offers the load given on the command line and prints the samples as JSON.
 *
 *   node overload-client.js URL RATE_PER_S DURATION_MS CRITICAL_SHARE TIMEOUT_MS
 */
import { offerLoad } from './overload-load.js';

const [url, rate, duration, critical, timeout] = process.argv.slice(2);
const samples = await offerLoad(
  String(url),
  Number(rate),
  Number(duration),
  Number(critical),
  Number(timeout),
  () => {},
);
// Compact rows: [atMs, critical, status, ms].
process.stdout.write(
  JSON.stringify(samples.map((s) => [Math.round(s.atMs), s.critical ? 1 : 0, s.status, Math.round(s.ms * 10) / 10])),
);
