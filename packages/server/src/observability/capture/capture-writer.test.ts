/**
 * The capture writer: files rotated by size and kept under the byte budget (the oldest deleted), every file
 * whole NDJSON lines, and a stuck disk costing dropped (counted) records, never a wait.
 */
import assert from 'node:assert/strict';
import { mkdtemp, readdir, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { createCaptureWriter } from './capture-writer.js';

const dirs: string[] = [];
async function freshDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'sluice-capture-'));
  dirs.push(dir);
  return dir;
}
after(() => Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true }))));

async function diskBytes(dir: string): Promise<number> {
  let total = 0;
  for (const name of await readdir(dir)) total += (await stat(join(dir, name))).size;
  return total;
}

const line = (i: number) => JSON.stringify({ t: i, domain: 'api', pad: 'x'.repeat(90) });

describe('capture writer', () => {
  it('rotates by size and deletes the oldest files to stay within maxBytes', async () => {
    const dir = await freshDir();
    const writer = createCaptureWriter({ dir, maxBytes: 10_000, fileBytes: 2_000 });
    for (let i = 0; i < 1000; i++) {
      writer.push(line(i));
      if (i % 10 === 9) await writer.flush();
    }
    await writer.close();
    const names = (await readdir(dir)).sort();
    assert.ok(names.length >= 4, `rotated into several files: ${names.join(' ')}`);
    const bytes = await diskBytes(dir);
    assert.ok(bytes <= 10_000, `${bytes} bytes on disk`);
    assert.equal(writer.stats().bytes, bytes);
    // The newest records are kept, in order, each file whole lines.
    const text = (await Promise.all(names.map((n) => readFile(join(dir, n), 'utf8')))).join('');
    assert.ok(text.endsWith('\n'));
    const ts = text
      .trimEnd()
      .split('\n')
      .map((l) => (JSON.parse(l) as { t: number }).t);
    assert.equal(ts.at(-1), 999);
    assert.deepEqual(
      ts,
      [...ts].sort((a, b) => a - b),
    );
    assert.equal(writer.stats().dropped, 0);
  });

  it('counts the budget of files a previous run left, and starts a file of its own', async () => {
    const dir = await freshDir();
    let clock = 1_000;
    const first = createCaptureWriter({ dir, maxBytes: 8_000, fileBytes: 2_000, now: () => clock });
    for (let i = 0; i < 60; i++) first.push(line(i));
    await first.close();
    clock = 2_000;
    const second = createCaptureWriter({ dir, maxBytes: 8_000, fileBytes: 2_000, now: () => clock });
    for (let i = 60; i < 120; i++) {
      second.push(line(i));
      await second.flush();
    }
    await second.close();
    assert.ok((await diskBytes(dir)) <= 8_000);
    const names = (await readdir(dir)).sort();
    assert.match(names.at(-1) as string, /^capture-000000000002000-/);
  });

  it('drops and counts records while the disk is stuck, without waiting', async () => {
    const dir = await freshDir();
    let release: (() => void) | undefined;
    const writer = createCaptureWriter({
      dir,
      maxBytes: 1_000_000,
      maxQueueBytes: 5_000,
      openFile: async () => ({
        // Stuck until released, then quick again.
        write: () =>
          release !== undefined
            ? Promise.resolve()
            : new Promise<void>((resolve) => {
                release = resolve;
              }),
        close: async () => {},
      }),
    });
    writer.push(line(0));
    // Until the first write is under way (the directory is made and listed first).
    while (release === undefined) await new Promise((resolve) => setImmediate(resolve));
    // The first write hangs; the queue fills to its bound, the rest is dropped.
    for (let i = 1; i <= 200; i++) writer.push(line(i));
    const { dropped } = writer.stats();
    assert.ok(dropped > 150, `dropped ${dropped}`);
    assert.equal(writer.stats().written, 0);
    release();
    await writer.close();
    // What waited in the queue is written once the disk answers; the dropped stay counted.
    assert.equal(writer.stats().dropped, dropped);
    assert.equal(writer.stats().written, 201 - dropped);
  });

  it('drops a line longer than maxLine, so every file stays readable', async () => {
    const dir = await freshDir();
    const writer = createCaptureWriter({ dir, maxBytes: 1_000_000, maxLine: 100 });
    writer.push('x'.repeat(101));
    writer.push('{"ok":1}');
    await writer.close();
    assert.deepEqual(writer.stats().dropped, 1);
    assert.equal(writer.stats().written, 1);
  });

  it('bounds a line and the queue in bytes, as replay reads them: multi-byte keys are not let through', async () => {
    const dir = await freshDir();
    const writer = createCaptureWriter({ dir, maxBytes: 1_000_000, maxLine: 120, maxQueueBytes: 400 });
    writer.push(`{"k":"${'é'.repeat(60)}"}`); // 68 characters, 128 bytes: longer than the line bound
    for (let i = 0; i < 4; i++) writer.push(`{"k":"${'€'.repeat(35)}"}`); // 43 characters, 113 bytes (+1) each
    await writer.close();
    // The long line is dropped; three lines fill 342 of the 400 queued bytes, the fourth would pass them.
    assert.equal(writer.stats().dropped, 2);
    assert.equal(writer.stats().written, 3);
  });
});
