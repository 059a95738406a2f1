/** `sluice replay` on files: a live capture with a line cut short, replayed under stricter rules. */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
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
      assert.match(text, /^max\t\d+\trefuses 0\.0 % of keys, 0\.0 % of requests$/m);
      assert.equal(await replayCommand.run(['x.ndjson'], io), 2, 'no --rules');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
