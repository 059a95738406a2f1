/**
 * Parses rule files in a worker thread with a time and heap bound, so a big or hostile file never stalls decisions.
 */
import { extname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import type { LoadResult, RuleSource } from 'sluice/rules';
import { RULE_ISSUE_CODES } from 'sluice/rules';

/** How long one parse may take before the worker is stopped and the reload fails. @default 60 s */
export const PARSE_TIMEOUT_MS = 60_000;
/**
 * Heap of the parsing worker: a file that makes the parser need more fails the reload alone, not the
 * service. YAML takes about 90 MB of heap per MB of text while it is parsed, so a file at the 8 MiB cap
 * needs about 750 MB. @default 1536 MB
 */
export const PARSE_HEAP_MB = 1536;

const EXT = extname(fileURLToPath(import.meta.url));
const WORKER_URL = new URL(`./parse-worker${EXT}`, import.meta.url).href;
/**
 * The worker's entry. From the TypeScript sources (tests, `tsx`), the worker must register tsx itself:
 * Node 20 does not pass `--import` hooks on to worker threads. The built package runs the .js directly.
 */
const ENTRY =
  EXT === '.ts'
    ? `import(${JSON.stringify(import.meta.resolve('tsx/esm/api'))}).then((tsx) => { tsx.register(); return import(${JSON.stringify(WORKER_URL)}); })`
    : `import(${JSON.stringify(WORKER_URL)})`;

/**
 * Parses rule sources in a worker thread, so the event loop keeps answering while a large file is
 * parsed (YAML costs about 0.7 s per MB; an 8 MB file would stall every request for seconds). The
 * worker's heap and time are bounded: running out of either, or crashing, is a failed load with
 * `ERR_SLUICE_RULES_LOAD_FAILED`, never an exception — the rules in use stay.
 */
export function parseOffThread(
  sources: RuleSource[],
  limits: { timeoutMs?: number; heapMb?: number; mergeDomains?: boolean } = {},
): Promise<LoadResult> {
  const files = sources.map((s) => s.file);
  const failed = (why: string): LoadResult => ({
    ok: false,
    issues: [
      {
        code: RULE_ISSUE_CODES.loadFailed,
        message: `parsing the rules failed: ${why}; the rules in use stay`,
        file: files.join(', '),
        line: 0,
        column: 0,
      },
    ],
    files,
  });
  return new Promise((resolve) => {
    let settled = false;
    const worker = new Worker(ENTRY, {
      eval: true,
      workerData: { sources, mergeDomains: limits.mergeDomains === true },
      resourceLimits: { maxOldGenerationSizeMb: limits.heapMb ?? PARSE_HEAP_MB },
      stdout: false,
      stderr: false,
    });
    const finish = (result: LoadResult) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve(result);
      void worker.terminate();
    };
    const timeoutMs = limits.timeoutMs ?? PARSE_TIMEOUT_MS;
    const timer = setTimeout(() => finish(failed(`it took longer than ${timeoutMs} ms`)), timeoutMs);
    timer.unref();
    worker.once('message', (result: LoadResult) => finish(result));
    worker.once('error', (error) => finish(failed(error.message)));
    // A result that cannot cross back (structured clone has its own limits) arrives as 'messageerror', and
    // the thread then exits with 0: both are failed loads with a reason, not a silent exit.
    worker.once('messageerror', (error) => finish(failed(`its result could not be passed back (${error.message})`)));
    worker.once('exit', (code) => finish(failed(`the parsing thread stopped without a result (exit code ${code})`)));
  });
}
