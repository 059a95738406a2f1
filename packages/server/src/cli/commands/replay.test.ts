/** `sluice replay` on files: a live capture with a line cut short replayed under stricter rules; nginx logs; the HTML report. */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { parseRules } from 'sluice/rules';
import { captureLive, seededTrace } from '../../tools/replay/capture-live.js';
import { replayCommand } from './replay.js';

const rulesText = (perMinute: number) =>
  `domain: api\ndescriptors:\n  - key: user\n    rate_limit:\n      name: per-user\n      unit: minute\n      requests_per_unit: ${perMinute}\n`;

describe('sluice replay', () => {
  it('reports flips per rule and key, the bad line, and suggested limits', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sluice-replay-'));
    try {
      const loaded = parseRules([{ file: 'live.yaml', text: rulesText(20) }]);
      assert.ok(loaded.ok);
      const capture = captureLive(loaded.ruleSet, seededTrace(7, 2000, 5, 400));
      const lines = capture.map((r) => JSON.stringify(r));
      lines.splice(100, 0, '{"t":1,"domain":"api","descr');
      writeFileSync(join(dir, 'capture.ndjson'), `${lines.join('\n')}\n`);
      writeFileSync(join(dir, 'strict.yaml'), rulesText(10));
      const out: string[] = [];
      const err: string[] = [];
      const io = { out: (t: string) => out.push(t), err: (t: string) => err.push(t) };
      const code = await replayCommand.run([join(dir, 'capture.ndjson'), '--rules', join(dir, 'strict.yaml')], io);
      assert.equal(code, 0, err.join('\n'));
      assert.match(err.join('\n'), /capture\.ndjson:101: not JSON/);
      const text = out.join('\n');
      assert.match(text, /^2000 requests replayed/);
      const live = capture.filter((r) => r.outcome === 'OVER_LIMIT').length;
      const all = text.split('\n').find((l) => l.startsWith('(all)'));
      assert.match(all ?? '', new RegExp(`^\\(all\\)\\t${2000 - live}/${live}\\t`));
      assert.match(text, /per-user\t/);
      assert.match(text, /keys flip/);
      // Suggestions per rule: the rule's id and limit names, then one line per percentile.
      assert.match(text, /^api\|user \(per-user\): 5 keys, \d+ requests$/m);
      assert.match(text, /^ {2}max\t\d+\trefuses 0\.0 % of keys, 0\.0 % of requests$/m);
      assert.equal(await replayCommand.run(['x.ndjson'], io), 2, 'no --rules');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('reads nginx access logs through --map, reports bad and overlong lines, and writes a self-contained HTML report', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sluice-replay-'));
    try {
      const lines: string[] = [];
      for (let i = 0; i < 60; i++) {
        const ip = `203.0.113.${i % 2}`;
        const status = i % 2 === 0 && i >= 40 ? 429 : 200;
        lines.push(
          `${ip} - - [10/Oct/2024:13:55:${String(i % 60).padStart(2, '0')} +0000] "GET /a HTTP/1.1" ${status} 5 "-" "ua"`,
        );
      }
      lines.splice(10, 0, 'garbage', `${'x'.repeat(70_000)}`);
      writeFileSync(join(dir, 'access.log'), `${lines.join('\n')}\n`);
      writeFileSync(
        join(dir, 'edge.yaml'),
        'domain: edge\ndescriptors:\n  - key: remote_address\n    rate_limit:\n      name: per-ip\n      unit: minute\n      requests_per_unit: 20\n',
      );
      const out: string[] = [];
      const err: string[] = [];
      const io = { out: (t: string) => out.push(t), err: (t: string) => err.push(t) };
      const report = join(dir, 'report.html');
      const args = [join(dir, 'access.log'), '--format', 'nginx', '--map', 'remote_addr=remote_address'];
      const code = await replayCommand.run([...args, '--rules', join(dir, 'edge.yaml'), '--out', report], io);
      assert.equal(code, 0, err.join('\n'));
      assert.match(err.join('\n'), /access\.log:11: not an nginx access log line/);
      assert.match(err.join('\n'), /access\.log:12: line longer than 65536/);
      const text = out.join('\n');
      assert.match(text, /^60 requests replayed/);
      // 30 per address in the minute, 20 allowed: 10 each rejected; live rejected 10 of one address.
      assert.match(text, /^\(all\)\t50\/10\t40\/20\t\+\d+ -\d+$/m);
      const html = readFileSync(report, 'utf8');
      assert.match(html, /^<!doctype html>/);
      assert.match(html, /<svg /);
      assert.match(html, /rule per-ip/);
      assert.doesNotMatch(
        html,
        /<script|https?:\/\/(?!www\.w3\.org\/2000\/svg)/,
        'self-contained: no scripts, nothing fetched',
      );
      assert.equal(
        await replayCommand.run([...args.slice(0, 3), '--rules', join(dir, 'edge.yaml')], io),
        2,
        'no --map',
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
