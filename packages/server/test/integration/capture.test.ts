/**
 * `sluice serve --capture` end to end: a real service killed with SIGKILL while it writes leaves NDJSON that
 * reads up to its last whole line, and replaying that capture under the same rules reproduces every live
 * outcome (sample 1); values are hashed unless --capture-raw-keys; /metrics counts the records.
 */
import assert from 'node:assert/strict';
import { createReadStream, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { after, describe, it } from 'node:test';
import { loadRules } from 'sluice/rules';
import {
  type CaptureProblem,
  type CaptureRecord,
  isCheckRecord,
  readCapture,
} from '../../src/tools/replay/capture-record.js';
import { startReplay } from '../../src/tools/replay/replay.js';
import { postJson, startSluice, tempFile } from './helpers.js';

const RULES = `domain: api
descriptors:
  - key: user
    rate_limit:
      name: per-user
      unit: minute
      requests_per_unit: 20
  - key: plan
    value: free
    rate_limit:
      unit: minute
      requests_per_unit: 50
`;

const rules = tempFile('rules.yaml', RULES);
const dirs: string[] = [];
after(() => {
  rules.remove();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

function captureDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-capture-it-'));
  dirs.push(dir);
  return join(dir, 'capture');
}

async function readAll(
  dir: string,
): Promise<{ records: CaptureRecord[]; problems: CaptureProblem[]; lines: number[] }> {
  const records: CaptureRecord[] = [];
  const problems: CaptureProblem[] = [];
  const lines: number[] = [];
  for (const name of readdirSync(dir).sort()) {
    const file = join(dir, name);
    lines.push(readFileSync(file, 'utf8').split('\n').length);
    const input = createInterface({ input: createReadStream(file), crlfDelay: Number.POSITIVE_INFINITY });
    for await (const r of readCapture(input, file, (p) => problems.push(p))) if (!isCheckRecord(r)) records.push(r);
  }
  return { records, problems, lines };
}

const body = (user: string, plan: string) => ({
  domain: 'api',
  descriptors: [{ entries: [{ key: 'user', value: user }] }, { entries: [{ key: 'plan', value: plan }] }],
});

describe('sluice serve --capture', () => {
  it('after kill -9 mid-write the capture reads to its last whole line and replays with 0 mismatches', async () => {
    const dir = captureDir();
    const sluice = await startSluice(['--config', rules.path, '--capture', dir, '--capture-sample', '1']);
    const url = `http://127.0.0.1:${sluice.http}/json`;
    let answered = 0;
    for (let i = 0; i < 150; i++) {
      const res = await postJson(url, body(`alice-secret-${i % 4}`, i % 3 === 0 ? 'free' : 'paid'));
      assert.ok(res.status === 200 || res.status === 429);
      answered++;
    }
    // Requests keep coming while the process is killed: the kill lands while records are being written.
    const inFlight: Promise<unknown>[] = [];
    for (let i = 0; i < 200; i++) inFlight.push(postJson(url, body(`bob-${i % 3}`, 'free')).catch(() => undefined));
    await inFlight[50];
    const { signal } = await sluice.stop('SIGKILL');
    await Promise.all(inFlight);
    assert.equal(signal, 'SIGKILL');
    const { records, problems } = await readAll(dir);
    assert.ok(records.length >= answered, `${records.length} records, ${answered} answered before the burst`);
    // At most one bad line, and only a file's last (cut short by the kill).
    assert.ok(problems.length <= 1, JSON.stringify(problems));
    for (const p of problems) {
      const total = readFileSync(p.source, 'utf8').split('\n').length;
      assert.equal(p.line, total, 'only the last line may be cut short');
    }
    // Values the rules do not name are hashed; `free` (named by a rule) stays as it is.
    const text = readdirSync(dir)
      .map((n) => readFileSync(join(dir, n), 'utf8'))
      .join('');
    assert.ok(!text.includes('alice-secret'), 'no raw key without --capture-raw-keys');
    assert.ok(text.includes('"value":"free"'));
    const loaded = await loadRules([rules.path]);
    assert.ok(loaded.ok);
    const run = startReplay(loaded.ruleSet);
    for (const r of records) run.add(r);
    const { total } = run.result();
    assert.ok(total.baselineRejected > 0, 'the live run rejected some');
    assert.equal(total.newlyRejected + total.newlyAdmitted, 0, 'replay under the same rules: 0 mismatches');
  });

  it('--capture-raw-keys writes the values as sent; /metrics counts the records', async () => {
    const dir = captureDir();
    const sluice = await startSluice([
      '--config',
      rules.path,
      '--capture',
      dir,
      '--capture-sample',
      '1',
      '--capture-raw-keys',
    ]);
    try {
      for (let i = 0; i < 5; i++) await postJson(`http://127.0.0.1:${sluice.http}/json`, body('carol-raw', 'paid'));
      const metrics = await (await fetch(`http://127.0.0.1:${sluice.http}/metrics`)).text();
      assert.match(metrics, /sluice_capture_records_total\{result="dropped"\} 0/);
    } finally {
      await sluice.stop();
    }
    const { records } = await readAll(dir);
    assert.equal(records.length, 5);
    assert.equal(records[0]?.descriptors[0]?.entries[0]?.value, 'carol-raw');
  });

  it('refuses a sample outside 0..1 and capture flags without --capture', async () => {
    for (const args of [
      ['--capture', captureDir(), '--capture-sample', '2'],
      ['--capture-max-bytes', '1gb'],
      ['--capture', captureDir(), '--capture-max-bytes', '1tb'],
    ]) {
      const sluice = await startSluice(['--config', rules.path, ...args]).catch((error: Error) => error);
      assert.ok(sluice instanceof Error, `refused: ${args.join(' ')}`);
      assert.match(sluice.message, /capture/);
    }
  });
});
