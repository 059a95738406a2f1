/** `sluice replay`: decide captured requests (or access-log lines) again under a candidate rule file and report what would change. */
import { open, readFile, rename, rm, stat } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { loadRules, type RuleSet } from 'sluice/rules';
import { formatIssues } from '../../index.js';
import {
  ACCESS_LOG_FORMATS,
  type AccessLogFormat,
  type DescriptorMapping,
  parseAccessLine,
  parseMapping,
} from '../../tools/replay/access-log.js';
import type { CaptureProblem, ReplayRecord } from '../../tools/replay/capture-record.js';
import { renderReplayHtml } from '../../tools/replay/html-report.js';
import { evictionWarning, type ReplayResult, type ReplayTally } from '../../tools/replay/replay.js';
import { replayFiles } from '../../tools/replay/replay-files.js';
import { printable } from '../../tools/replay/terminal-text.js';
import type { Command, CommandIo } from '../command.js';

const HELP = `usage: sluice replay FILE... --rules FILE [--baseline FILE] [--out report.html] [--window 1m] [--top 20]
       sluice replay ACCESS_LOG... --format nginx|envoy|json --map FIELD=KEY[,FIELD=KEY]... --domain D --rules FILE

Decides every captured request (NDJSON from sluice serve --capture, one decision a line) again under the
candidate rules on a virtual clock, and reports admitted and rejected under each side, per rule and per
key, and the requests that flip. /v1/check records are decided under the policy each was sent with (no
rule file changes those), reported as rules named "check <policy>". Without --baseline the baseline is what was decided live (for access
logs: status 429 is rejected). Bad lines (cut short by a crash, corrupt, over 64 KiB) are reported by
file:line and skipped. Also suggests a limit per rule and --window from the observed per-key peaks (p50,
p90, p99, max) with the share of keys and requests each would refuse.

options:
  --rules FILE       the candidate rules (file or directory)
  --baseline FILE    rules to compare with instead of the live outcomes
  --out FILE         also write an HTML report with charts over time (self-contained)
  --format F         capture (default), nginx (combined), envoy (default access log format), json (lines)
  --map SPEC         access logs: one descriptor from log fields, e.g. remote_addr=remote_address or
                     method=method,path=path (entries of one descriptor); repeat for more descriptors
  --map-file FILE    the same, one SPEC a line
  --domain D         access logs: the domain of the requests (default: the rules' only domain)
  --window DUR       the window of the suggested limits (default 1m): 1s, 1m, 1h, 1d
  --top N            keys listed, most flips first (default 20)
  -h, --help         show this help

examples:
  sluice replay capture/*.ndjson --rules stricter.yaml --out report.html
  sluice replay access.log --format nginx --map remote_addr=remote_address --rules edge.yaml
`;

const WINDOWS: Readonly<Record<string, number>> = { '1s': 1000, '1m': 60_000, '1h': 3_600_000, '1d': 86_400_000 };
/** Most descriptors a mapping may build (each --map is one). */
const MAX_MAPPINGS = 64;

interface Values {
  rules?: string;
  baseline?: string;
  window?: string;
  top?: string;
  out?: string;
  format?: string;
  map?: string[];
  'map-file'?: string;
  domain?: string;
}

const FLAGS = {
  rules: { type: 'string' },
  baseline: { type: 'string' },
  window: { type: 'string' },
  top: { type: 'string' },
  out: { type: 'string' },
  format: { type: 'string' },
  map: { type: 'string', multiple: true },
  'map-file': { type: 'string' },
  domain: { type: 'string' },
} as const;

async function rulesOf(path: string, io: CommandIo): Promise<RuleSet | undefined> {
  const loaded = await loadRules([path]);
  if (loaded.ok) return loaded.ruleSet;
  io.err(formatIssues(loaded.issues));
  return undefined;
}

/** How each line is read: undefined for a capture, else an access-log line through the mappings (a message when the flags are wrong). */
async function lineParser(
  values: Values,
  candidate: RuleSet,
): Promise<((line: string) => ReplayRecord | string) | undefined | string> {
  const format = values.format ?? 'capture';
  if (format === 'capture') return undefined;
  if (!(ACCESS_LOG_FORMATS as readonly string[]).includes(format)) {
    return `--format: use capture, ${ACCESS_LOG_FORMATS.join(', ')}`;
  }
  const specs = [...(values.map ?? [])];
  if (values['map-file'] !== undefined) {
    const file = values['map-file'];
    const text = await readFile(file, 'utf8').catch((error: unknown) => {
      throw new FileProblem(`cannot read --map-file ${file}: ${reason(error)}`);
    });
    specs.push(...text.split('\n').filter((l) => l.trim() !== '' && !l.trim().startsWith('#')));
  }
  if (specs.length === 0 || specs.length > MAX_MAPPINGS) return `--map: give 1 to ${MAX_MAPPINGS} mappings`;
  const mappings: DescriptorMapping[] = [];
  for (const spec of specs) {
    const mapping = parseMapping(spec);
    if (typeof mapping === 'string') return mapping;
    mappings.push(mapping);
  }
  const domain = values.domain ?? (candidate.domains.size === 1 ? [...candidate.domains.keys()][0] : undefined);
  if (domain === undefined) return '--domain: the rules have several domains; say which the log is of';
  return (line) => parseAccessLine(line, format as AccessLogFormat, domain, mappings);
}

// Keys, rule ids of /v1/check policies and limit names come from clients: printed through printable().
const row = (name: string, t: ReplayTally) =>
  `${printable(name)}\t${t.baselineAdmitted}/${t.baselineRejected}\t${t.admitted}/${t.rejected}\t+${t.newlyRejected} -${t.newlyAdmitted}`;

function printSuggestions(io: CommandIo, result: ReplayResult, window: string): void {
  const pct = (x: number) => `${(x * 100).toFixed(1)} %`;
  io.out(`\nsuggested limits per ${window}, per rule (from the per-key peaks of the keys it counted):`);
  for (const [rule, rec] of result.recommendations) {
    const names = [...(result.ruleNames.get(rule) ?? [])];
    const named = names.length > 0 ? ` (${names.join(', ')})` : '';
    io.out(`${printable(`${rule}${named}`)}: ${rec.keys} keys, ${rec.units} requests`);
    for (const s of rec.suggestions) {
      io.out(
        `  ${s.percentile}\t${s.limit}\trefuses ${pct(s.keysRejected)} of keys, ${pct(s.requestsRejected)} of requests`,
      );
    }
  }
}

function printReport(
  io: CommandIo,
  result: ReplayResult,
  flipped: readonly (readonly [string, ReplayTally])[],
  labels: { side: string; window: string; top: number },
): void {
  const checks = result.checks > 0 ? ` (${result.checks} of them /v1/check items, under their own policies)` : '';
  io.out(
    `${result.requests} requests replayed${checks}\n\nrule\t${labels.side} admitted/rejected\tcandidate admitted/rejected\tflips (+rejected -admitted)`,
  );
  io.out(row('(all)', result.total));
  for (const [name, t] of result.byRule) io.out(row(name, t));
  io.out(`\n${flipped.length} of ${result.byKey.size} keys flip; the first ${Math.min(labels.top, flipped.length)}:`);
  for (const [key, t] of flipped.slice(0, labels.top)) io.out(row(key, t));
  printSuggestions(io, result, labels.window);
  if (result.evictions > 0) io.out(`\n${evictionWarning(result.evictions)}`);
}

/** Bad input or output files: a coded error and exit 2 (exit 1 is for bad rules). */
class FileProblem extends Error {
  readonly code = 'ERR_SLUICE_REPLAY_FILE';
}

const reason = (error: unknown) => {
  const code = (error as NodeJS.ErrnoException).code;
  if (code === 'ENOENT') return 'no such file';
  if (code === 'EISDIR') return 'a directory, not a file';
  if (code === 'EACCES' || code === 'EPERM') return 'permission denied';
  return (error as Error).message;
};

/** Every input is a file that can be opened, checked before the replay (not a stack trace halfway through). */
async function checkInputs(files: readonly string[]): Promise<void> {
  for (const file of files) {
    try {
      if ((await stat(file)).isDirectory()) throw Object.assign(new Error(), { code: 'EISDIR' });
      await (await open(file, 'r')).close();
    } catch (error) {
      throw new FileProblem(`cannot read ${file}: ${reason(error)}`);
    }
  }
}

/**
 * The HTML report's file, opened before the replay (an --out that cannot be written fails at once). The report is
 * written to a temporary file beside it and renamed into place: an existing report is never left empty.
 */
async function openReport(out: string) {
  const temp = `${out}.${process.pid}.tmp`;
  try {
    if ((await stat(out).catch(() => undefined))?.isDirectory()) throw Object.assign(new Error(), { code: 'EISDIR' });
    const handle = await open(temp, 'w');
    return {
      async write(html: string) {
        await handle.writeFile(html);
        await handle.close();
        await rename(temp, out);
      },
      /** Removes the temporary file when the replay failed before writing it (after a write there is none). */
      async discard() {
        await handle.close().catch(() => undefined);
        await rm(temp, { force: true });
      },
    };
  } catch (error) {
    throw new FileProblem(`cannot write --out ${out}: ${reason(error)}`);
  }
}

let stdoutGuarded = false;

/**
 * `sluice replay ... | head`: the reader goes away and stdout's next write fails with EPIPE, an 'error' event
 * nothing handles (a crash). Printing just ends; every other error is still thrown.
 */
function guardStdout(): void {
  if (stdoutGuarded) return;
  stdoutGuarded = true;
  process.stdout.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code !== 'EPIPE' && error.code !== 'ERR_STREAM_DESTROYED') throw error;
  });
}

function parse(argv: readonly string[], io: CommandIo): { values: Values; files: string[] } | undefined {
  try {
    const parsed = parseArgs({ args: [...argv], strict: true, allowPositionals: true, options: FLAGS });
    return { values: parsed.values, files: parsed.positionals };
  } catch (error) {
    io.err(`sluice replay: ${(error as Error).message}\n\n${HELP}`);
    return undefined;
  }
}

/** `sluice replay`. */
export const replayCommand: Command = {
  name: 'replay',
  summary:
    'decide a capture or access log again under candidate rules: what flips, per rule and per key; suggested limits',
  help: HELP,
  async run(argv, io) {
    const parsed = parse(argv, io);
    if (parsed === undefined) return 2;
    const { values, files } = parsed;
    const window = values.window ?? '1m';
    const windowMs = WINDOWS[window];
    const top = Number(values.top ?? 20);
    if (
      files.length === 0 ||
      values.rules === undefined ||
      windowMs === undefined ||
      !Number.isInteger(top) ||
      top < 0
    ) {
      io.err(`sluice replay: give capture files, --rules, and a --window of 1s, 1m, 1h or 1d\n\n${HELP}`);
      return 2;
    }
    const candidate = await rulesOf(values.rules, io);
    const baseline = values.baseline === undefined ? undefined : await rulesOf(values.baseline, io);
    if (candidate === undefined || (values.baseline !== undefined && baseline === undefined)) return 1;
    guardStdout();
    try {
      return await replayRun(values, files, candidate, baseline, { io, window, windowMs, top });
    } catch (error) {
      if (!(error instanceof FileProblem)) throw error;
      io.err(`sluice replay: ${error.code} ${error.message}`);
      return 2;
    }
  },
};

/** The replay itself, once the flags and rules are read: its report printed, and written to --out. */
async function replayRun(
  values: Values,
  files: readonly string[],
  candidate: RuleSet,
  baseline: RuleSet | undefined,
  labels: { io: CommandIo; window: string; windowMs: number; top: number },
): Promise<number> {
  const { io, window, windowMs, top } = labels;
  const parseLine = await lineParser(values, candidate);
  if (typeof parseLine === 'string') {
    io.err(`sluice replay: ${parseLine}`);
    return 2;
  }
  await checkInputs(files);
  const report = values.out === undefined ? undefined : await openReport(values.out);
  try {
    const problems: CaptureProblem[] = [];
    let problemCount = 0;
    const { result, series } = await replayFiles(files, {
      candidate,
      baseline,
      windowMs,
      parse: parseLine,
      // The first 20 are shown; the rest only counted (a corrupt file must not fill memory with problems).
      onProblem: (p) => (problems.length < 20 ? problems.push(p) : problemCount++),
    });
    for (const p of problems) io.err(printable(`${p.source}:${p.line}: ${p.message} (skipped)`));
    const bad = problems.length + problemCount;
    if (bad > 0) io.err(`${bad} bad line${bad === 1 ? '' : 's'} skipped`);
    if (result.evictions > 0) io.err(`sluice replay: ${evictionWarning(result.evictions)}`);
    const side = baseline === undefined ? 'live' : 'baseline';
    const flipped = [...result.byKey].filter(([, t]) => t.newlyRejected + t.newlyAdmitted > 0);
    flipped.sort(([, a], [, b]) => b.newlyRejected + b.newlyAdmitted - (a.newlyRejected + a.newlyAdmitted));
    // The file first: a reader that stops reading stdout (| head) must not cost the report.
    if (report !== undefined) {
      const shown = flipped.slice(0, top);
      await report.write(renderReplayHtml({ result, series, side, window, flipped: shown, problems: bad }));
    }
    printReport(io, result, flipped, { side, window, top });
    if (values.out !== undefined) io.out(`\nreport: ${values.out}`);
    return 0;
  } finally {
    await report?.discard();
  }
}
