/**
 * replayFiles, the command's reading loop: a file mixing the service's layout (the fast path), other JSON
 * layouts (JSON.parse), `/v1/check` records, blank, CRLF and bad lines replays as the parsed records do in
 * memory, and reports each bad line — a check policy the service would refuse included — then goes on.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { parseRules } from 'sluice/rules';
import { captureLive, seededTrace } from './capture-live.js';
import { type CaptureProblem, parseCaptureLine, type ReplayRecord } from './capture-record.js';
import { replay } from './replay.js';
import { replayFiles } from './replay-files.js';

const loaded = parseRules([
  {
    file: 'rules.yaml',
    text: 'domain: api\ndescriptors:\n  - key: user\n    rate_limit: { name: per-user, unit: minute, requests_per_unit: 20 }\n',
  },
]);
if (!loaded.ok) throw new Error(JSON.stringify(loaded.issues));
const ruleSet = loaded.ruleSet;

describe('replayFiles', () => {
  it('replays a mixed file as its records replay in memory, and reports the bad lines', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sluice-replay-files-'));
    try {
      const live = captureLive(ruleSet, seededTrace(3, 3000, 7, 400));
      const lines = live.map((r, i) => {
        const written = { ...r, rule: 'per-user', src: 'json' };
        // Every third line in another layout (spaces, another field order): read by JSON.parse.
        return i % 3 === 0
          ? JSON.stringify(
              { outcome: r.outcome, cost: r.cost, t: r.t, domain: r.domain, descriptors: r.descriptors },
              null,
              1,
            ).replace(/\n/g, '')
          : JSON.stringify(written);
      });
      const t0 = live[0]?.t ?? 0;
      const check = (i: number, outcome: string) =>
        `{"t":${t0 + i},"check":{"key":"#k${i % 2}","limit":2,"period":"1m","algorithm":"sliding-window"},"cost":1,"outcome":"${outcome}","rule":"sw2/60000","src":"check"}`;
      lines.splice(
        10,
        0,
        check(0, 'OK'),
        check(1, 'OK'),
        check(2, 'OK'),
        `${check(3, 'OK')}\r`,
        check(4, 'OVER_LIMIT'),
      );
      lines.splice(20, 0, '', '{"t":1,"check":{"key":"k","limit":-1,"period":"1m"},"cost":1,"outcome":"OK"}');
      lines.splice(
        30,
        0,
        '{"t":1,"domain":"api","descriptors":[{"entries":[{"key":"user","value":"x"}]}],"cost":1,"outcome":"OK"',
      );
      const file = join(dir, 'capture.ndjson');
      writeFileSync(file, `${lines.join('\n')}\n`);

      const problems: CaptureProblem[] = [];
      const { result, series } = await replayFiles([file], { candidate: ruleSet, onProblem: (p) => problems.push(p) });
      assert.deepEqual(
        problems.map((p) => p.line),
        [22, 31],
      );
      assert.match(problems[0]?.message ?? '', /not decided: checks\[0\]\.limit/);
      assert.match(problems[1]?.message ?? '', /not JSON/);

      const records = lines
        .map((l) => (l.trim() === '' ? 'blank' : parseCaptureLine(l.replace(/\r$/, ''))))
        .filter((r): r is ReplayRecord => typeof r !== 'string')
        .filter((r) => !('check' in r && r.check.limit === -1));
      const expected = await replay(records, ruleSet);
      assert.equal(result.requests, 3005);
      assert.equal(result.checks, 5);
      assert.deepEqual(result.total, expected.total);
      assert.deepEqual([...result.byRule], [...expected.byRule]);
      assert.deepEqual([...result.byKey].sort(), [...expected.byKey].sort());
      assert.equal(result.total.newlyAdmitted + result.total.newlyRejected, 0, 'the live outcomes, reproduced');
      // Two keys of a sliding window of 2: #k0 at 0, 2, 4 (the third over), #k1 at 1, 3.
      assert.deepEqual(result.byRule.get('check sw2/60000'), {
        admitted: 4,
        rejected: 1,
        baselineAdmitted: 4,
        baselineRejected: 1,
        newlyRejected: 0,
        newlyAdmitted: 0,
      });
      assert.equal(result.recommendations.get('check sw2/60000')?.keys, 2);
      assert.equal(result.recommendations.get('api|user')?.keys, 7);
      assert.deepEqual([...(result.ruleNames.get('api|user') ?? [])], ['per-user']);
      let inSeries = 0;
      for (const bin of series.total.values()) inSeries += bin.admitted + bin.rejected;
      assert.equal(inSeries, 3005);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
