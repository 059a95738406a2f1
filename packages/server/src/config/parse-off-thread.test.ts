/**
 * Reloads parse in a worker thread, whose stack is larger than the main thread's: a file's fate must not
 * depend on it. Start (and `sluice validate`) parse on the main thread, so both must answer alike.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { MAX_DESCRIPTOR_DEPTH, parseRules, RULE_ISSUE_CODES } from 'sluice/rules';
import { parseOffThread } from './parse-off-thread.js';

/** A domain whose descriptors nest `levels` deep, each level one `descriptors:` list. */
function nested(levels: number): string {
  let text = 'domain: deep\ndescriptors:\n';
  let indent = '';
  for (let i = 1; i < levels; i++) {
    text += `${indent}  - key: k${i}\n${indent}    descriptors:\n`;
    indent += '    ';
  }
  return `${text}${indent}  - key: last\n${indent}    rate_limit: { unit: minute, requests_per_unit: 5 }\n`;
}

describe('parseOffThread answers as parseRules does on the main thread', () => {
  for (const levels of [MAX_DESCRIPTOR_DEPTH, MAX_DESCRIPTOR_DEPTH + 1, 600, 900]) {
    it(`descriptors ${levels} levels deep: ${levels > MAX_DESCRIPTOR_DEPTH ? 'refused' : 'loaded'} alike`, async () => {
      const sources = [{ file: 'deep.yaml', text: nested(levels) }];
      const here = parseRules(sources);
      const there = await parseOffThread(sources);
      assert.equal(here.ok, levels <= MAX_DESCRIPTOR_DEPTH);
      assert.equal(there.ok, here.ok);
      if (here.ok || there.ok) return;
      assert.deepEqual(there.issues, here.issues);
      assert.equal(here.issues[0]?.code, RULE_ISSUE_CODES.tooComplex);
      assert.match(here.issues[0]?.message ?? '', new RegExp(`${MAX_DESCRIPTOR_DEPTH}`));
    });
  }
});
