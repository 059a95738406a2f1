/**
 * Hot reload under a running engine: files added, changed, broken and deleted in a watched directory.
 * The watch uses a short real debounce; the test waits for the reload callback, never for a window.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, renameSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { createManualClock } from '../../src/core/clock.js';
import {
  createRulesEngine,
  type LoadResult,
  loadRules,
  RULE_ISSUE_CODES,
  type RulesEngine,
  type RulesWatcher,
  watchRules,
} from '../../src/rules/index.js';
import { request, T0 } from './helpers.js';

const api = (limit: number) =>
  `domain: api\ndescriptors:\n  - key: user\n    rate_limit: { unit: minute, requests_per_unit: ${limit} }\n`;
const admin = 'domain: admin\ndescriptors:\n  - key: user\n    rate_limit: { unit: minute, requests_per_unit: 1 }\n';

describe('hot reload', () => {
  let dir: string;
  let engine: RulesEngine;
  let watcher: RulesWatcher;
  const results: LoadResult[] = [];
  let waiting: ((r: LoadResult) => void) | undefined;

  /** The next reload's result (fails the test after 5 s: a reload must come within a second). */
  const nextReload = () =>
    new Promise<LoadResult>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('no reload within 5 s')), 5000);
      waiting = (r) => {
        clearTimeout(timer);
        resolve(r);
      };
    });
  /** Writes atomically (temp file + rename), as editors and config management do. */
  const write = (name: string, text: string) => {
    const tmp = join(dir, `.${name}.tmp`);
    writeFileSync(tmp, text);
    renameSync(tmp, join(dir, name));
  };
  const remaining = async (domain: string) =>
    (await engine.shouldRateLimit(request(domain, [['user', 'u']]))).statuses[0];

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'sluice-rules-reload-'));
    writeFileSync(join(dir, 'api.yaml'), api(5));
    const loaded = await loadRules(dir);
    assert.ok(loaded.ok);
    engine = createRulesEngine({ ruleSet: loaded.ruleSet, clock: createManualClock(T0) });
    watcher = watchRules(dir, {
      engine,
      debounceMs: 20,
      onReload: (r) => {
        results.push(r);
        waiting?.(r);
      },
    });
  });

  after(async () => {
    watcher.close();
    await engine.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('a new file adds its domain; counters of the others survive', async () => {
    for (let i = 0; i < 2; i++) await remaining('api');
    const reloaded = nextReload();
    write('admin.yaml', admin);
    const result = await reloaded;
    assert.ok(result.ok);
    assert.deepEqual([...engine.ruleSet.domains.keys()].sort(), ['admin', 'api']);
    assert.equal((await remaining('admin'))?.limitRemaining, 0);
    assert.equal((await remaining('api'))?.limitRemaining, 2);
  });

  it('a changed file applies its new limit and keeps counting', async () => {
    const reloaded = nextReload();
    write('api.yaml', api(10));
    assert.ok((await reloaded).ok);
    const s = await remaining('api');
    assert.deepEqual([s?.currentLimit?.requestsPerUnit, s?.limitRemaining], [10, 6]);
  });

  it('a broken file is reported with its position and the last good rules stay', async () => {
    const reloaded = nextReload();
    write('api.yaml', api(10).replace('unit: minute', 'unit: fortnight'));
    const result = await reloaded;
    assert.equal(result.ok, false);
    if (!result.ok) {
      assert.deepEqual(
        result.issues.map((i) => [i.code, i.file, i.line]),
        [[RULE_ISSUE_CODES.unknownUnit, join(dir, 'api.yaml'), 4]],
      );
    }
    const s = await remaining('api');
    assert.deepEqual([s?.currentLimit?.requestsPerUnit, s?.limitRemaining], [10, 5]);
    assert.equal(watcher.lastGood, engine.ruleSet);
  });

  it('fixing it again applies, still with the same counters', async () => {
    const reloaded = nextReload();
    write('api.yaml', api(10));
    assert.ok((await reloaded).ok);
    assert.equal((await remaining('api'))?.limitRemaining, 4);
  });

  it('a deleted file removes its domain', async () => {
    const reloaded = nextReload();
    unlinkSync(join(dir, 'admin.yaml'));
    assert.ok((await reloaded).ok);
    assert.deepEqual([...engine.ruleSet.domains.keys()], ['api']);
    const gone = await remaining('admin');
    assert.equal(gone?.currentLimit, undefined);
    assert.equal((await remaining('api'))?.limitRemaining, 3);
  });

  it('reload() reloads on demand and reports even when nothing changed', async () => {
    const before = results.length;
    const result = await watcher.reload();
    assert.ok(result.ok);
    assert.equal(results.length, before + 1);
    assert.equal((await remaining('api'))?.limitRemaining, 2);
  });
});

describe('hot reload of a single file', () => {
  it('watches the file through its directory, so a replaced file is seen', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sluice-rules-file-'));
    const file = join(dir, 'api.yaml');
    writeFileSync(file, api(5));
    writeFileSync(join(dir, 'other.yaml'), admin);
    const seen: LoadResult[] = [];
    let notify: (() => void) | undefined;
    const watcher = watchRules(file, {
      debounceMs: 20,
      onReload: (r) => {
        seen.push(r);
        notify?.();
      },
    });
    try {
      // The watch does not keep the process alive by itself; this timer does (and fails a lost reload).
      let timer: NodeJS.Timeout | undefined;
      const reloaded = new Promise<void>((resolve, reject) => {
        timer = setTimeout(() => reject(new Error('no reload within 5 s')), 5000);
        notify = resolve;
      }).finally(() => clearTimeout(timer));
      const tmp = join(dir, '.api.yaml.tmp');
      writeFileSync(tmp, api(7));
      renameSync(tmp, file);
      await reloaded;
      const last = seen.at(-1);
      assert.ok(last?.ok);
      // Only the watched file is loaded, not its neighbours.
      assert.deepEqual(last.files, [file]);
      assert.equal(last.ruleSet.domains.get('api')?.root.bare.get('user')?.limits[0]?.requestsPerUnit, 7);
    } finally {
      watcher.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
