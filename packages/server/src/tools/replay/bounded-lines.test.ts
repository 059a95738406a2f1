/** The bounded line splitter: lines across chunk edges, CRLF, a last line without newline, overlong lines as null. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { boundedLines } from './bounded-lines.js';

async function collect(chunks: string[], max: number): Promise<(string | null)[]> {
  const out: (string | null)[] = [];
  for await (const line of boundedLines(chunks, max)) out.push(line);
  return out;
}

describe('boundedLines', () => {
  it('splits across chunks and CRLF, keeps a last line without newline', async () => {
    assert.deepEqual(await collect(['ab', 'c\r\nde\n', '\nf'], 10), ['abc', 'de', '', 'f']);
  });

  it('reports a line over the bound as null, skips it to its end, and reads on', async () => {
    const long = 'x'.repeat(25);
    assert.deepEqual(await collect(['ok\n', long.slice(0, 7), long.slice(7), '\nnext\n', long], 10), [
      'ok',
      null,
      'next',
      null,
    ]);
  });

  it('counts bytes, not characters: a line of 4 three-byte characters is 12 bytes', async () => {
    assert.deepEqual(await collect(['\u20ac\u20ac\u20ac\u20ac\n\u20ac\n'], 10), [null, '\u20ac']);
  });
});
