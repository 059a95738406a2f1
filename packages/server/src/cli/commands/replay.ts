/** `sluice replay`: decide captured requests again under a candidate rule file and report what would change. */
import { createReadStream } from 'node:fs';
import { createInterface } from 'node:readline';
import { parseArgs } from 'node:util';
import { loadRules, type RuleSet } from 'sluice/rules';
import { formatIssues } from '../../index.js';
import { type CaptureProblem, readCapture } from '../../tools/replay/capture-record.js';
import { recommendLimits } from '../../tools/replay/recommend.js';
import { type ReplayTally, requestKey, startReplay } from '../../tools/replay/replay.js';
import type { Command, CommandIo } from '../command.js';

const HELP = `usage: sluice replay CAPTURE... --rules FILE [--baseline FILE] [--window 1m] [--top 20]

Decides every captured request (NDJSON, one decision a line) again under the candidate rules on a
virtual clock, and reports admitted and rejected under each side, per rule and per key, and the
requests that flip. Without --baseline the baseline is what was decided live. Bad lines (cut short by a
crash, corrupt) are reported by file:line and skipped. Also suggests a limit per --window from the
observed per-key peaks (p50, p90, p99, max) with the share of keys and requests each would refuse.

options:
  --rules FILE     the candidate rules (file or directory)
  --baseline FILE  rules to compare with instead of the live outcomes
  --window DUR     the window of the suggested limits (default 1m): 1s, 1m, 1h
  --top N          keys listed, most flips first (default 20)
  -h, --help       show this help

example:
  sluice replay capture/*.ndjson --rules stricter.yaml
`;

const WINDOWS: Readonly<Record<string, number>> = { '1s': 1000, '1m': 60_000, '1h': 3_600_000, '1d': 86_400_000 };

async function rulesOf(path: string, io: CommandIo): Promise<RuleSet | undefined> {
  const loaded = await loadRules([path]);
  if (loaded.ok) return loaded.ruleSet;
  io.err(formatIssues(loaded.issues));
  return undefined;
}

const row = (name: string, t: ReplayTally) =>
  `${name}\t${t.baselineAdmitted}/${t.baselineRejected}\t${t.admitted}/${t.rejected}\t+${t.newlyRejected} -${t.newlyAdmitted}`;

/** `sluice replay`. */
export const replayCommand: Command = {
  name: 'replay',
  summary: 'decide a capture again under candidate rules: what flips, per rule and per key; suggested limits',
  help: HELP,
  async run(argv, io) {
    let values: { rules?: string; baseline?: string; window?: string; top?: string };
    let files: string[];
    try {
      const parsed = parseArgs({
        args: [...argv],
        strict: true,
        allowPositionals: true,
        options: {
          rules: { type: 'string' },
          baseline: { type: 'string' },
          window: { type: 'string' },
          top: { type: 'string' },
        },
      });
      values = parsed.values;
      files = parsed.positionals;
    } catch (error) {
      io.err(`sluice replay: ${(error as Error).message}\n\n${HELP}`);
      return 2;
    }
    const windowMs = WINDOWS[values.window ?? '1m'];
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
    const run = startReplay(candidate, baseline);
    const problems: CaptureProblem[] = [];
    const observed: { t: number; key: string; cost: number }[] = [];
    for (const file of files) {
      const lines = createInterface({ input: createReadStream(file), crlfDelay: Number.POSITIVE_INFINITY });
      for await (const record of readCapture(lines, file, (p) => problems.push(p))) {
        run.add(record);
        observed.push({ t: record.t, key: requestKey(record), cost: record.cost });
      }
    }
    for (const p of problems.slice(0, 20)) io.err(`${p.source}:${p.line}: ${p.message} (skipped)`);
    if (problems.length > 0) io.err(`${problems.length} bad line${problems.length === 1 ? '' : 's'} skipped`);
    const result = run.result();
    const side = baseline === undefined ? 'live' : 'baseline';
    io.out(
      `${result.requests} requests replayed\n\nrule\t${side} admitted/rejected\tcandidate admitted/rejected\tflips (+rejected -admitted)`,
    );
    io.out(row('(all)', result.total));
    for (const [name, t] of result.byRule) io.out(row(name, t));
    const flipped = [...result.byKey].filter(([, t]) => t.newlyRejected + t.newlyAdmitted > 0);
    flipped.sort(([, a], [, b]) => b.newlyRejected + b.newlyAdmitted - (a.newlyRejected + a.newlyAdmitted));
    io.out(`\n${flipped.length} of ${result.byKey.size} keys flip; the first ${Math.min(top, flipped.length)}:`);
    for (const [key, t] of flipped.slice(0, top)) io.out(row(key, t));
    const rec = recommendLimits(observed, windowMs);
    io.out(`\nsuggested limits per ${values.window ?? '1m'} (per-key peaks over ${rec.keys} keys):`);
    for (const s of rec.suggestions) {
      const pct = (x: number) => `${(x * 100).toFixed(1)} %`;
      io.out(
        `${s.percentile}\t${s.limit}\trefuses ${pct(s.keysRejected)} of keys, ${pct(s.requestsRejected)} of requests`,
      );
    }
    return 0;
  },
};
