/** `sluice replay` on files: a live capture with a line cut short replayed under stricter rules; nginx logs; the HTML report. */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
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

  const capture = (user: string, t = 1764374400000) =>
    JSON.stringify({ t, domain: 'api', descriptors: [{ entries: [{ key: 'user', value: user }] }], outcome: 'OK' });

  /** A directory with strict.yaml (1 per minute) and `lines` as capture.ndjson; `run` replays with extra flags. */
  function setUp(lines: string[]) {
    const dir = mkdtempSync(join(tmpdir(), 'sluice-replay-'));
    writeFileSync(join(dir, 'strict.yaml'), rulesText(1));
    writeFileSync(join(dir, 'capture.ndjson'), `${lines.join('\n')}\n`);
    const out: string[] = [];
    const err: string[] = [];
    const io = { out: (t: string) => out.push(t), err: (t: string) => err.push(t) };
    const run = (...args: string[]) =>
      replayCommand.run([join(dir, 'capture.ndjson'), '--rules', join(dir, 'strict.yaml'), ...args], io);
    return { dir, out, err, run };
  }

  it("prints a client's escape codes as text, never as terminal commands", async () => {
    const evil = '\u001b[2J\u001b]0;owned\u0007\u001b[31mRED\r\nfake line\u009b';
    const { dir, out, err, run } = setUp([capture(evil), capture(evil), '{"t":"\u001b[2J"}']);
    try {
      assert.equal(await run(), 0, err.join('\n'));
      const printed = `${out.join('\n')}\n${err.join('\n')}`;
      // No control character but the report's own tabs and newlines.
      const control = (c: string) => c !== '\t' && c !== '\n' && (c < ' ' || (c >= '\u007f' && c <= '\u009f'));
      assert.deepEqual([...printed].filter(control), []);
      assert.match(out.join('\n'), /^api\|user=\\x1b\[2J\\x1b\]0;owned\\x07\\x1b\[31mRED\\x0d\\x0afake line\\x9b\t/m);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('skips a time no date holds and still writes the HTML report', async () => {
    const { dir, err, run } = setUp([capture('a'), capture('b', 1e16), capture('c', 1e300), capture('d', -1)]);
    try {
      const report = join(dir, 'report.html');
      assert.equal(await run('--out', report), 0, err.join('\n'));
      assert.match(err.join('\n'), /capture\.ndjson:2: "t": expected a time/);
      assert.match(err.join('\n'), /^3 bad lines skipped$/m);
      assert.match(readFileSync(report, 'utf8'), /1 requests replayed, 3 bad lines skipped/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('refuses a missing or directory input and an --out it cannot write with a coded error, exit 2, before replaying', async () => {
    const { dir, out, err, run } = setUp([capture('a')]);
    try {
      const rules = ['--rules', join(dir, 'strict.yaml')];
      assert.equal(
        await replayCommand.run([join(dir, 'missing.ndjson'), ...rules], { out: () => {}, err: (t) => err.push(t) }),
        2,
      );
      assert.match(
        err.pop() ?? '',
        /^sluice replay: ERR_SLUICE_REPLAY_FILE cannot read .*missing\.ndjson: no such file$/,
      );
      assert.equal(await replayCommand.run([dir, ...rules], { out: () => {}, err: (t) => err.push(t) }), 2);
      assert.match(err.pop() ?? '', /ERR_SLUICE_REPLAY_FILE cannot read .*: a directory, not a file$/);
      assert.equal(await run('--out', join(dir, 'no', 'such', 'dir', 'r.html')), 2);
      assert.match(err.pop() ?? '', /ERR_SLUICE_REPLAY_FILE cannot write --out .*r\.html: no such file$/);
      mkdirSync(join(dir, 'taken.html'));
      assert.equal(await run('--out', join(dir, 'taken.html')), 2);
      assert.match(err.pop() ?? '', /cannot write --out .*taken\.html: a directory, not a file$/);
      assert.deepEqual(out, [], 'nothing replayed');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('writes the HTML report and exits 0 when the reader of stdout goes away (| head)', async () => {
    const { dir } = setUp(Array.from({ length: 3000 }, (_, i) => capture(`user${i % 1500}`)));
    try {
      const report = join(dir, 'report.html');
      const main = fileURLToPath(new URL('../main.ts', import.meta.url));
      const args = ['replay', join(dir, 'capture.ndjson'), '--rules', join(dir, 'strict.yaml'), '--out', report];
      const child = spawn(process.execPath, ['--import', 'tsx', main, ...args, '--top', '2000'], {
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      // Closed before the child prints anything: every write to its stdout fails with EPIPE.
      child.stdout.destroy();
      let stderr = '';
      child.stderr.on('data', (chunk: Buffer) => {
        stderr += chunk;
      });
      const code = await new Promise((resolve) => child.on('close', resolve));
      assert.equal(code, 0, stderr);
      assert.doesNotMatch(stderr, /EPIPE|Error/);
      assert.ok(existsSync(report));
      assert.match(readFileSync(report, 'utf8'), /3000 requests replayed/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
