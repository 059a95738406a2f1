import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import type { LoadResult, RuleSet } from 'sluice/rules';
import { parseRules, RULE_ISSUE_CODES } from 'sluice/rules';
import { createConfigSource } from './config-source.js';
import { parseOffThread } from './parse-off-thread.js';

const GOOD = 'domain: cs\ndescriptors:\n  - key: user\n    rate_limit: { unit: minute, requests_per_unit: 5 }\n';

function setup(parse: (sources: { file: string; text: string }[]) => LoadResult | Promise<LoadResult>) {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-config-source-'));
  const file = join(dir, 'rules.yaml');
  writeFileSync(file, GOOD);
  const first = parseRules([{ file, text: GOOD }]);
  assert.ok(first.ok);
  const applied: RuleSet[] = [];
  const reported: LoadResult[] = [];
  let applyThrows = false;
  const source = createConfigSource(
    [file],
    first,
    (ruleSet) => {
      if (applyThrows) throw new Error('apply broke');
      applied.push(ruleSet);
    },
    (result) => reported.push(result),
    { parse },
  );
  return {
    source,
    applied,
    reported,
    breakApply: () => {
      applyThrows = true;
    },
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}

describe('config source', () => {
  it('a parser that throws, or an apply that throws, is a failed reload that changes nothing', async () => {
    let throws = true;
    const s = setup((sources) => {
      if (throws) throw new Error('parser exploded');
      return parseRules(sources);
    });
    try {
      const failed = await s.source.reload();
      assert.equal(failed.ok, false);
      assert.equal(failed.ok ? '' : failed.issues[0]?.code, RULE_ISSUE_CODES.loadFailed);
      assert.match(failed.ok ? '' : (failed.issues[0]?.message ?? ''), /parser exploded/);
      assert.equal(s.applied.length, 0);
      assert.equal(s.source.status.lastError?.issues[0]?.code, RULE_ISSUE_CODES.loadFailed);

      throws = false;
      s.breakApply();
      const unapplied = await s.source.reload();
      assert.equal(unapplied.ok ? '' : unapplied.issues[0]?.code, RULE_ISSUE_CODES.loadFailed);
      assert.match(unapplied.ok ? '' : (unapplied.issues[0]?.message ?? ''), /apply broke/);
      assert.deepEqual(
        s.reported.map((r) => r.ok),
        [false, false],
      );
    } finally {
      s.remove();
    }
  });

  it('parses off-thread; a parsing thread that runs out of heap is a failed load, not a crash', async () => {
    const ok = await parseOffThread([{ file: 'a.yaml', text: GOOD }]);
    assert.equal(ok.ok, true);
    assert.equal(ok.ok && ok.ruleSet.domains.get('cs')?.root.bare.get('user')?.limits[0]?.requestsPerUnit, 5);
    // 40,000 descriptors need far more than a 4 MB heap.
    const big = `domain: big\ndescriptors:\n${Array.from({ length: 40_000 }, (_, i) => `  - {key: k, value: v${i}}\n`).join('')}`;
    const starved = await parseOffThread([{ file: 'big.yaml', text: big }], { heapMb: 4 });
    assert.equal(starved.ok, false);
    assert.equal(starved.ok ? '' : starved.issues[0]?.code, RULE_ISSUE_CODES.loadFailed);
  });
});
