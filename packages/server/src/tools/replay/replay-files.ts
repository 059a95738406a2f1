/**
 * `sluice replay`'s reading loop: capture files (or access logs) read a chunk at a time, each line scanned without
 * JSON.parse when it is in the shape the service writes (JSON.parse reads any other), its request interned, and
 * decided at once — no await, no record object per line. Bad lines are reported and skipped, as readCapture does.
 */
import { createReadStream } from 'node:fs';
import type { RuleSet } from 'sluice/rules';
import { boundedLineBatches } from './bounded-lines.js';
import { type CaptureProblem, MAX_CAPTURE_LINE, parseCaptureLine, type ReplayRecord } from './capture-record.js';
import { type ScannedLine, scanCaptureLine, scannedLine } from './capture-scan.js';
import { type ReplayResult, type ReplayRun, startReplay } from './replay.js';
import { ReplaySeries } from './replay-series.js';

/** Options of {@link replayFiles}. */
export interface ReplayFilesOptions {
  readonly candidate: RuleSet;
  readonly baseline?: RuleSet | undefined;
  /** The window of the suggested limits. @default 60_000 */
  readonly windowMs?: number;
  /** Reads one line of another format (access logs); the default is a capture line. */
  readonly parse?: ((line: string) => ReplayRecord | string) | undefined;
  /** Most keys each of the replay's stores keeps (tests). @default no bound */
  readonly maxKeys?: number | undefined;
  /** Each bad line, as it is met. */
  readonly onProblem: (problem: CaptureProblem) => void;
}

/** What {@link replayFiles} found: the replay and its counts over time. */
export interface ReplayFilesResult {
  readonly result: ReplayResult;
  readonly series: ReplaySeries;
}

/** Bytes read at a time: a few thousand capture lines per await. */
const CHUNK_BYTES = 1 << 20;

/** Decides one line into `run`; a message when the line is bad (or its request cannot be decided). */
function replayLine(
  run: ReplayRun,
  series: ReplaySeries,
  line: string,
  scan: ScannedLine | undefined,
  parse: (line: string) => ReplayRecord | string,
): string | undefined {
  try {
    const key = scan !== undefined && scanCaptureLine(line, scan) ? run.keys.ofScan(scan) : undefined;
    if (key !== undefined && scan !== undefined) {
      series.add(scan.t, run.addKey(key, scan.t, scan.cost, scan.outcome === 'OVER_LIMIT'));
      return undefined;
    }
    const record = parse(line);
    if (typeof record === 'string') return record;
    series.add(record.t, run.add(record));
    return undefined;
  } catch (error) {
    // A request no decider takes (a check's policy the service refuses, a descriptor the engine refuses).
    return `not decided: ${(error as Error).message}`;
  }
}

/** Replays `files` in order (each in time order) under `options.candidate`; see {@link startReplay}. */
export async function replayFiles(files: readonly string[], options: ReplayFilesOptions): Promise<ReplayFilesResult> {
  const run = startReplay(options.candidate, options.baseline, {
    ...(options.windowMs === undefined ? {} : { windowMs: options.windowMs }),
    ...(options.maxKeys === undefined ? {} : { maxKeys: options.maxKeys }),
  });
  const series = new ReplaySeries();
  // The scan is a capture's fast path; other formats go through their own parser.
  const scan = options.parse === undefined ? scannedLine() : undefined;
  const parse = options.parse ?? parseCaptureLine;
  for (const file of files) {
    let n = 0;
    const chunks = createReadStream(file, { highWaterMark: CHUNK_BYTES });
    for await (const batch of boundedLineBatches(chunks, MAX_CAPTURE_LINE)) {
      for (const line of batch) {
        n++;
        if (line === null) {
          options.onProblem({ source: file, line: n, message: `line longer than ${MAX_CAPTURE_LINE} bytes` });
          continue;
        }
        // Blank lines are skipped silently (a file may end with one); only a line opening with a space is trimmed.
        if (line.length === 0 || (line.charCodeAt(0) <= 0x20 && line.trim() === '')) continue;
        const problem = replayLine(run, series, line, scan, parse);
        if (problem !== undefined) options.onProblem({ source: file, line: n, message: problem });
      }
    }
  }
  return { result: run.result(), series };
}
