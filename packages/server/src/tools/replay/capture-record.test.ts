/** Reading a capture: good lines read, truncated / corrupt / wrong-shape / overlong lines reported and skipped. */
import assert from 'node:assert/strict';
import { createReadStream, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { boundedLines } from './bounded-lines.js';
import {
  type CaptureProblem,
  MAX_CAPTURE_LINE,
  parseCaptureLine,
  type ReplayRecord,
  readCapture,
} from './capture-record.js';

const good = (t: number, outcome = 'OK') =>
  JSON.stringify({ t, domain: 'api', descriptors: [{ entries: [{ key: 'user', value: `u${t}` }] }], outcome });

describe('readCapture', () => {
  it('reads a file cut short by a crash and with corrupt lines, reporting each bad line and going on', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sluice-capture-'));
    try {
      const lines = [
        good(1),
        '{"t":2,"domain":"api","descri', // a crash mid-write, then the process came back and went on
        good(3, 'OVER_LIMIT'),
        '\u0000\u0000\u0000garbage',
        JSON.stringify({ t: 4, domain: 'api', descriptors: [], outcome: 'OK' }),
        JSON.stringify({ t: 5, domain: 'api', descriptors: [{ entries: [{ key: 'k', value: 'v' }] }], outcome: 'x' }),
        `"${'x'.repeat(MAX_CAPTURE_LINE)}"`,
        '',
        good(6),
        '{"t":7,"dom', // the last line, cut short, with no newline
      ];
      const file = join(dir, 'capture-0001.ndjson');
      writeFileSync(file, lines.join('\n'));
      const problems: CaptureProblem[] = [];
      const records: ReplayRecord[] = [];
      const read = boundedLines(createReadStream(file, { highWaterMark: 1024 }), MAX_CAPTURE_LINE);
      for await (const r of readCapture(read, file, (p) => problems.push(p))) records.push(r);
      assert.deepEqual(
        records.map((r) => [r.t, r.outcome, r.cost]),
        [
          [1, 'OK', 1],
          [3, 'OVER_LIMIT', 1],
          [6, 'OK', 1],
        ],
      );
      assert.deepEqual(
        problems.map((p) => p.line),
        [2, 4, 5, 6, 7, 10],
      );
      assert.match(problems[0]?.message ?? '', /not JSON/);
      assert.match(problems[2]?.message ?? '', /descriptors/);
      assert.match(problems[3]?.message ?? '', /outcome/);
      assert.match(problems[4]?.message ?? '', /longer than/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('refuses a time no date holds (after 8.64e15 ms or before 1970) as a bad line, not a crash in the report', () => {
    const at = (t: number) =>
      `{"t":${t},"domain":"api","descriptors":[{"entries":[{"key":"user","value":"u"}]}],"cost":1,"outcome":"OK"}`;
    for (const t of [1e16, 1e300, -1]) assert.match(String(parseCaptureLine(at(t))), /"t": expected a time/);
    assert.match(
      String(parseCaptureLine(`{"t":1e16,"check":{"key":"k","limit":3,"period":"1s"},"outcome":"OK"}`)),
      /"t"/,
    );
    assert.equal((parseCaptureLine(at(8.64e15)) as ReplayRecord).t, 8.64e15);
  });

  it('refuses a line with both a check and descriptors: it cannot be decided both ways', () => {
    const both =
      '{"t":7,"domain":"api","descriptors":[{"entries":[{"key":"user","value":"u"}]}],"cost":1,"outcome":"OK","check":{"key":"k","limit":3,"period":"1s"}}';
    assert.match(String(parseCaptureLine(both)), /either "check" or "domain" and "descriptors", not both/);
    assert.match(
      String(parseCaptureLine('{"t":7,"domain":"api","check":{"key":"k","limit":3,"period":"1s"},"outcome":"OK"}')),
      /not both/,
    );
  });
});
