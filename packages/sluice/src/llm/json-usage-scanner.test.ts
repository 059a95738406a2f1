/** The JSON usage scanner: finds the top-level usage member whatever the chunking, bounded, and only at the top level. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { createJsonUsageScanner } from './json-usage-scanner.js';

/** Feeds `body` in chunks of `size` bytes. */
function scan(body: string, max = 1024, size = 1) {
  const scanner = createJsonUsageScanner(max);
  const bytes = new TextEncoder().encode(body);
  for (let i = 0; i < bytes.length; i += size) scanner.push(bytes.subarray(i, i + size));
  return scanner;
}

describe('createJsonUsageScanner', () => {
  const body = '{"id":"x","choices":[{"text":"a \\"usage\\": {1}"}],"usage":{"prompt_tokens":3,"total_tokens":5}}';

  it('keeps the top-level usage member whatever the chunk size', () => {
    for (const size of [1, 2, 3, 7, 1000]) {
      const s = scan(body, 1024, size);
      assert.equal(s.usageText, '{"prompt_tokens":3,"total_tokens":5}', `chunks of ${size}`);
      assert.equal(s.complete, true);
      assert.equal(s.sawError, false);
    }
  });

  it('ignores a usage key nested deeper, or inside a string', () => {
    const s = scan('{"data":{"usage":{"a":1}},"text":"\\"usage\\":2"}');
    assert.equal(s.usageText, undefined);
    assert.equal(s.complete, true);
  });

  it('keeps a scalar usage up to the next member or the end', () => {
    assert.equal(scan('{"usage": 12 ,"x":1}').usageText, '12');
    assert.equal(scan('{"usage":null}').usageText, 'null');
  });

  it('past the bound keeps nothing and says so (a huge usage member is never held)', () => {
    const huge = `{"usage":{"pad":"${'x'.repeat(100_000)}"},"id":"y"}`;
    const s = scan(huge, 64, 4096);
    assert.equal(s.usageText, undefined);
    assert.equal(s.usageTooLong, true);
    assert.equal(s.complete, true);
  });

  it('notes a top-level error member', () => {
    const s = scan('{"error":{"message":"overloaded","usage":1}}');
    assert.equal(s.sawError, true);
    assert.equal(s.usageText, undefined);
  });

  it('a truncated body is not complete, and a usage cut mid-value is not kept', () => {
    const s = scan('{"id":"x","usage":{"total_tokens":5');
    assert.equal(s.complete, false);
    assert.equal(s.usageText, undefined);
  });

  it('a long top-level string is not held as a key', () => {
    const s = scan(`{"${'k'.repeat(10_000)}":1,"usage":{"t":1}}`);
    assert.equal(s.usageText, '{"t":1}');
  });

  it('reads any body the same in one chunk, byte by byte, or split anywhere (property)', () => {
    const seed = Date.now();
    console.log(`fast-check seed ${seed}`);
    const value = fc.jsonValue({ maxDepth: 3 });
    fc.assert(
      fc.property(
        fc.dictionary(fc.string({ maxLength: 6 }), value, { maxKeys: 4 }),
        fc.option(fc.dictionary(fc.string({ maxLength: 6 }), value, { maxKeys: 3 })),
        fc.string({ unit: 'binary', maxLength: 40 }),
        fc.array(fc.nat(400), { maxLength: 6 }),
        (rest, usage, text, cuts) => {
          const body = JSON.stringify({ choices: [{ message: { content: text } }], ...rest, usage, id: 'x' });
          const bytes = new TextEncoder().encode(body);
          const points = [...new Set([0, ...cuts.map((c) => Math.min(c, bytes.length)), bytes.length])].sort(
            (a, b) => a - b,
          );
          const split = createJsonUsageScanner(1024);
          for (let i = 1; i < points.length; i++) split.push(bytes.slice(points[i - 1], points[i]));
          const single = scan(body, 1024, 1);
          assert.equal(split.usageText, single.usageText);
          assert.equal(split.complete, single.complete);
          assert.equal(split.usageTooLong, single.usageTooLong);
          if (!single.usageTooLong)
            assert.deepEqual(JSON.parse(single.usageText ?? 'null'), JSON.parse(JSON.stringify(usage)));
        },
      ),
      { seed, numRuns: 300 },
    );
  });
});
