/**
 * The charts in docs/img are what `sluice simulate` draws today: each committed SVG is drawn again from
 * the command in docs/algorithms.md and compared byte for byte, so a change to the algorithms or the
 * charts that forgets the docs fails here. Every chart the page links to exists.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, it } from 'node:test';
import { isAlgorithmName } from 'sluice';
import { generateTrace, isTraceName, renderRunSvg, simulate } from '../../src/tools/simulate/index.js';

const root = resolve(import.meta.dirname, '../../../..');
const img = join(root, 'docs', 'img');
/** Settings beyond the defaults, as in the commands of docs/algorithms.md. */
const EXTRA: Record<string, { durationMs?: number }> = { 'sliding-window-poisson.svg': { durationMs: 20_000 } };

describe('docs/img', () => {
  const files = readdirSync(img).filter((f) => f.endsWith('.svg'));

  it('holds the charts docs/algorithms.md shows', () => {
    const page = readFileSync(join(root, 'docs', 'algorithms.md'), 'utf8');
    const linked = [...page.matchAll(/\(img\/([\w.-]+\.svg)\)/g)].map((m) => m[1] as string);
    assert.ok(linked.length >= 10);
    for (const name of linked) assert.ok(files.includes(name), `docs/img/${name} is missing`);
  });

  for (const file of files) {
    it(`${file} is what simulate draws now`, () => {
      const match = /^([a-z-]+)-(steady|bursty|boundary|poisson)\.svg$/.exec(file);
      assert.ok(match, `${file}: name it <algorithm>-<trace>.svg`);
      const [, algorithm, traceName] = match;
      assert.ok(isAlgorithmName(algorithm) && traceName !== undefined && isTraceName(traceName));
      const trace = generateTrace(traceName, { limit: 10, periodMs: 1000, seed: 1, ...EXTRA[file] });
      const result = simulate({ trace, algorithms: [algorithm], limit: 10, periodMs: 1000 });
      const expected = renderRunSvg(result, result.runs[0] as (typeof result.runs)[number]);
      assert.equal(
        readFileSync(join(img, file), 'utf8'),
        expected,
        `docs/img/${file} is stale: regenerate it with the commands in docs/algorithms.md`,
      );
    });
  }
});
