import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseCsvTrace, TraceParseError } from './csv-trace.js';

describe('parseCsvTrace', () => {
  it('reads timestamps and costs, skipping a header, blank lines and comments, and sorts by time', () => {
    const trace = parseCsvTrace(
      ['timestamp,cost', '# a comment', '1000', '', '250,2', '"500", 0', '2024-05-01T00:00:00.250Z,1', '1500.7'].join(
        '\n',
      ),
      'requests.csv',
    );
    assert.equal(trace.name, 'requests.csv');
    assert.deepEqual(trace.events, [
      { atMs: 250, cost: 2 },
      { atMs: 500, cost: 0 },
      { atMs: 1000, cost: 1 },
      { atMs: 1500, cost: 1 },
      { atMs: Date.parse('2024-05-01T00:00:00.250Z'), cost: 1 },
    ]);
  });

  it('accepts Windows line endings and no header', () => {
    assert.deepEqual(
      parseCsvTrace('5\r\n6\r\n').events.map((e) => e.atMs),
      [5, 6],
    );
  });

  it('names every bad line, with its number and why', () => {
    const text = ['timestamp', '100', 'soon', '200,-1', '', '300,1,extra', '400,1.5', '-5', '2024-13-45'].join('\n');
    let caught: unknown;
    try {
      parseCsvTrace(text, 'bad.csv');
    } catch (error) {
      caught = error;
    }
    assert.ok(caught instanceof TraceParseError);
    assert.equal(caught.code, 'ERR_SLUICE_INVALID_TRACE');
    assert.equal(caught.option, 'bad.csv:3');
    assert.deepEqual(
      caught.problems.map((p) => p.line),
      [3, 4, 6, 7, 8, 9],
    );
    assert.match(caught.message, /^bad\.csv: 6 bad lines\n/);
    assert.match(caught.message, /bad\.csv:3: 'soon' is not a timestamp/);
    assert.match(caught.message, /bad\.csv:4: cost '-1' is not a whole number/);
    assert.match(caught.message, /bad\.csv:6: expected 'timestamp\[,cost\]', found 3 fields/);
    assert.match(caught.message, /bad\.csv:7: cost '1\.5'/);
    assert.match(caught.message, /bad\.csv:8: '-5' is not a timestamp/);
    assert.match(caught.message, /bad\.csv:9: '2024-13-45' is not a timestamp/);
  });

  it('does not take a bad first line for a header when it is not one', () => {
    assert.throws(() => parseCsvTrace('12x\n100\n', 'f.csv'), /f\.csv:1: '12x' is not a timestamp/);
  });

  it('lists at most 20 bad lines and says how many more', () => {
    const text = Array.from({ length: 25 }, () => 'x,y,z').join('\n');
    assert.throws(
      () => parseCsvTrace(`1\n${text}`, 't.csv'),
      (error: unknown) => {
        assert.ok(error instanceof TraceParseError);
        assert.equal(error.problems.length, 25);
        assert.match(error.message, /t\.csv:21:.*\n {2}\.\.\. and 5 more$/);
        return true;
      },
    );
  });

  it('rejects a trace without requests', () => {
    assert.throws(() => parseCsvTrace('timestamp\n# nothing\n', 'empty.csv'), {
      code: 'ERR_SLUICE_INVALID_TRACE',
      message: /empty\.csv: no requests/,
    });
  });
});
