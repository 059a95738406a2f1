// Tests of the line splitter under the usage reader: every chunking of a stream gives the same lines.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { createLineReader } from './line-reader.js';

/** The lines of `text` as server-sent events define them (LF, CRLF or a lone CR ends one). */
const reference = (text: string) => {
  const lines = text.split(/\r\n|\r|\n/);
  lines.pop();
  return lines;
};

function read(bytes: Uint8Array, cuts: number[], maxLineBytes = 1024, asBuffer = true) {
  const lines: string[] = [];
  const decoder = new TextDecoder('utf-8', { ignoreBOM: true });
  const reader = createLineReader(maxLineBytes, (line, start, end) =>
    lines.push(decoder.decode(line.subarray(start, end))),
  );
  let at = 0;
  for (const cut of [...cuts, bytes.length]) {
    const piece = bytes.subarray(at, cut);
    reader.push(asBuffer ? Buffer.from(piece) : new Uint8Array(piece));
    at = cut;
  }
  reader.end();
  return { lines, dropped: reader.droppedLines };
}

describe('createLineReader', () => {
  const text =
    'data: {"a":"é ünï"}\n\ndata: x\r\n\r\nevent: y\rdata: 😀 z\n\n\ufeffdata: bom\n' +
    'data: {"choices":[{"delta":{"content":"abc "}}]}\n\n';
  const bytes = new TextEncoder().encode(text);

  it('gives the same lines for every chunking, from Buffers and from plain Uint8Arrays', () => {
    const expected = reference(text).map((l) => (l.startsWith('\ufeff') ? l.slice(1) : l));
    let seed = 7;
    const random = () => {
      seed = (seed * 1103515245 + 12345) % 2147483648;
      return seed / 2147483648;
    };
    for (let run = 0; run < 300; run++) {
      const cuts = Array.from({ length: Math.floor(random() * 6) }, () => Math.floor(random() * bytes.length)).sort(
        (a, b) => a - b,
      );
      assert.deepEqual(read(bytes, cuts, 1024, run % 2 === 0).lines, expected, `cuts ${cuts.join(',')}`);
    }
  });

  it('hands a line in one chunk on in place, and copies a line split across chunks (the caller may reuse its chunk)', () => {
    const chunk = Buffer.from('data: a\ndata: b');
    const seen: Uint8Array[] = [];
    const reader = createLineReader(1024, (line, start, end) => seen.push(line.subarray(start, end)));
    reader.push(chunk);
    chunk.fill(0x78); // the caller reuses its memory
    reader.push(Buffer.from('c\n'));
    assert.equal(seen[0]?.buffer, chunk.buffer);
    assert.notEqual(seen[1]?.buffer, chunk.buffer);
    assert.equal(Buffer.from(seen[1] as Uint8Array).toString(), 'data: bc');
  });

  it('holds a 1 MB line sent a byte at a time in about its own size (an upstream trickling bytes)', () => {
    // A list of pieces cost about 200 bytes of heap per byte of such a line: 218 MB for this one.
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as () => void;
    const lines: number[] = [];
    const reader = createLineReader(1 << 20, (_line, start, end) => lines.push(end - start));
    const one = Buffer.from('a');
    gc();
    const before = process.memoryUsage().heapUsed;
    for (let i = 0; i < 1_000_000; i++) reader.push(one);
    gc();
    const grown = process.memoryUsage().heapUsed - before;
    reader.push(Buffer.from('\n'));
    assert.deepEqual(lines, [1_000_000]);
    assert.ok(grown < 16 * 1024 * 1024, `${grown} bytes of heap held for a 1 MB line`);
  });

  it('drops a line over the bound whole, in one chunk or across chunks, and keeps the next', () => {
    const long = `data: ${'x'.repeat(2000)}\ndata: ok\n`;
    const b = new TextEncoder().encode(long);
    for (const cuts of [[], [10], [1500, 2003]]) {
      const { lines, dropped } = read(b, cuts);
      assert.deepEqual(lines, ['data: ok']);
      assert.equal(dropped, 1);
    }
  });
});
