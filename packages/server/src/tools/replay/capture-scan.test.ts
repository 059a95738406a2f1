/**
 * The capture scan (the replay's fast path) agrees with JSON.parse: every line it accepts, parseCaptureLine
 * reads to the same record — on the service's own lines, on hand-made tricky ones, and on random mutations.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { parseCaptureLine } from './capture-record.js';
import { scanCaptureLine, scannedLine } from './capture-scan.js';
import { ReplayKeys } from './replay-keys.js';

const keys = new ReplayKeys();
const into = scannedLine();

/** What the scan reads of `line` (as a record), or undefined when it leaves the line to JSON.parse. */
function scanned(line: string): unknown {
  if (!scanCaptureLine(line, into)) return undefined;
  const key = keys.ofScan(into);
  if (key === undefined) return undefined;
  const common = { t: into.t, cost: into.cost, outcome: into.outcome };
  if (key.check !== undefined) return { ...common, check: key.check };
  return { ...common, domain: key.domain, descriptors: key.descriptors };
}

/** Asserts that the scan, when it reads `line`, reads what JSON.parse does. */
function agrees(line: string): boolean {
  const fast = scanned(line);
  if (fast === undefined) return false;
  const slow = parseCaptureLine(line);
  assert.notEqual(typeof slow, 'string', `the scan read a line JSON.parse refuses: ${line} (${String(slow)})`);
  const { t, cost, outcome } = slow as { t: number; cost: number; outcome: string };
  const rest = 'check' in (slow as object) ? { check: (slow as { check: unknown }).check } : slow;
  assert.deepEqual(fast, { ...(rest as object), t, cost, outcome }, line);
  return true;
}

const SERVICE_LINES = [
  '{"t":1764374400000,"domain":"api","descriptors":[{"entries":[{"key":"user","value":"#5d0c9e1a7b64f2c81a09"}]}],"cost":1,"outcome":"OK","rule":"per-user","src":"json"}',
  '{"t":1764374400001,"domain":"api","descriptors":[{"entries":[{"key":"user","value":"u1"}]},{"entries":[{"key":"plan","value":"free"}]}],"cost":3,"outcome":"OVER_LIMIT","src":"grpc"}',
  '{"t":1764374400002,"check":{"key":"#0123456789abcdef0123","limit":5,"period":"1m","algorithm":"gcra","burst":2},"cost":1,"outcome":"OK","rule":"gc5/60000b2","src":"check"}',
  '{"t":0,"domain":"d","descriptors":[{"entries":[{"key":"k","value":"a\\"],\\"cost\\":9,"}]}],"cost":0,"outcome":"OK"}',
];

const TRICKY = [
  '{"t":1,"domain":"api","descriptors":[{"entries":[{"key":"k","value":"v"}]}],"cost":1,"outcome":"OK" }',
  '{ "t":1,"domain":"api","descriptors":[{"entries":[{"key":"k","value":"v"}]}],"cost":1,"outcome":"OK"}',
  '{"t":1.5,"domain":"api","descriptors":[{"entries":[{"key":"k","value":"v"}]}],"cost":1,"outcome":"OK"}',
  '{"t":01,"domain":"api","descriptors":[{"entries":[{"key":"k","value":"v"}]}],"cost":1,"outcome":"OK"}',
  '{"t":1,"domain":"a\\u0070i","descriptors":[{"entries":[{"key":"k","value":"v"}]}],"cost":1,"outcome":"OK"}',
  '{"t":1,"domain":"","descriptors":[{"entries":[{"key":"k","value":"v"}]}],"cost":1,"outcome":"OK"}',
  '{"t":1,"domain":"api","descriptors":[],"cost":1,"outcome":"OK"}',
  '{"t":1,"domain":"api","descriptors":[{"entries":[{"key":"k","value":"v"}]}],"cost":1,"outcome":"OK","rule":"a\tb"}',
  '{"t":1,"domain":"api","descriptors":[{"entries":[{"key":"k","value":"v"}]}],"cost":1,"outcome":"OK","rule":"x","cost":2}',
  '{"t":1,"domain":"api","descriptors":[{"entries":[{"key":"k","value":"v"}]}],"cost":-1,"outcome":"OK"}',
  '{"t":1,"domain":"api","descriptors":[{"entries":[{"key":"k","value":"v"}]}],"cost":1,"outcome":"ok"}',
  '{"t":1,"domain":"api","descriptors":[{"entries":[{"key":"k","value":"v"}]}],"cost":1,"outcome":"OK"}x',
  '{"t":1,"domain":"api","descriptors":[{"entries":[{"key":"k","value":"v"}]}]],"cost":1,"outcome":"OK"}',
  '{"t":1,"domain":"api","descriptors":[{"entries":[{"key":"k","value":1}]}],"cost":1,"outcome":"OK"}',
  '{"t":1,"check":{"key":"","limit":5},"cost":1,"outcome":"OK"}',
  '{"t":1,"check":{"key":"k","limit":5,"other":1},"cost":1,"outcome":"OK"}',
  '{"t":1,"check":{"key":"k","limit":5},"cost":1,"outcome":"OK","rule":"a,\\"cost\\":1"}',
  '{"t":1,"domain":"api","check":{"key":"k","limit":5},"cost":1,"outcome":"OK"}',
  '{"t":1,"check":{"key":"k","limit":5}],"cost":1,"outcome":"OK"}',
];

describe('scanCaptureLine', () => {
  it("reads the service's own lines as JSON.parse does", () => {
    for (const line of SERVICE_LINES) assert.ok(agrees(line), `scanned: ${line}`);
  });

  it('leaves every other shape to JSON.parse, or reads it the same', () => {
    for (const line of TRICKY) agrees(line);
    // Neither reads the broken ones.
    for (const line of TRICKY.slice(2)) {
      if (typeof parseCaptureLine(line) === 'string') assert.equal(scanned(line), undefined, line);
    }
  });

  it('agrees with JSON.parse on random mutations of real lines', () => {
    const alphabet = ['"', '\\', ',', ':', '{', '}', '[', ']', ' ', '0', '1', '.', 'e', '-', '\u0001', 'a', 'é'];
    const mutation = fc.record({
      line: fc.constantFrom(...SERVICE_LINES),
      edits: fc.array(
        fc.record({
          at: fc.nat(),
          del: fc.nat({ max: 3 }),
          text: fc.array(fc.constantFrom(...alphabet), { maxLength: 3 }).map((cs) => cs.join('')),
        }),
        { minLength: 1, maxLength: 3 },
      ),
    });
    const seed = Date.now() % 1_000_000;
    let read = 0;
    try {
      fc.assert(
        fc.property(mutation, ({ line, edits }) => {
          let text = line;
          for (const e of edits) {
            const at = e.at % (text.length + 1);
            text = text.slice(0, at) + e.text + text.slice(at + e.del);
          }
          if (agrees(text)) read++;
        }),
        { seed, numRuns: 20_000 },
      );
    } catch (error) {
      console.log(`seed ${seed}`);
      throw error;
    }
    assert.ok(read > 100, `some mutations stay readable (${read})`);
  });
});
