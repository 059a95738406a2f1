import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseDuration } from './duration.js';
import { isSluiceError } from './errors.js';

describe('parseDuration', () => {
  it('reads milliseconds and one-unit strings', () => {
    assert.equal(parseDuration(250), 250);
    assert.equal(parseDuration('500ms'), 500);
    assert.equal(parseDuration('1.5s'), 1500);
    assert.equal(parseDuration('1.1s'), 1100, 'a decimal fraction that is whole in ms');
    assert.equal(parseDuration('5m'), 300_000);
    assert.equal(parseDuration('1h'), 3_600_000);
    assert.equal(parseDuration('1d'), 86_400_000);
    assert.equal(parseDuration('2w'), 1_209_600_000);
  });

  it("reads the spellings users bring: '1min', '1h30m', '1 minute', '2 hours 15 mins'", () => {
    assert.equal(parseDuration('1min'), 60_000);
    assert.equal(parseDuration('1h30m'), 5_400_000);
    assert.equal(parseDuration('1h30m15s'), 5_415_000);
    assert.equal(parseDuration('1 minute'), 60_000);
    assert.equal(parseDuration('15 Minutes'), 900_000);
    assert.equal(parseDuration('2 hours 15 mins'), 8_100_000);
    assert.equal(parseDuration(' 10 sec '), 10_000);
    assert.equal(parseDuration('1.5h'), 5_400_000);
    assert.equal(parseDuration('1 day'), 86_400_000);
  });

  it('refuses what is not a duration, with a coded error naming the option', () => {
    for (const bad of ['', '5', 'h', '1 month', '1y', '1h-30m', '1x', '-1s', 'ms', '1h 30', '1e3ms', 'soon']) {
      assert.throws(
        () => parseDuration(bad, 'period'),
        (e: unknown) => isSluiceError(e, 'ERR_SLUICE_INVALID_DURATION') && e.option === 'period',
        JSON.stringify(bad),
      );
    }
    assert.throws(() => parseDuration('1.0001ms'), /whole number/);
    assert.throws(() => parseDuration(-5), /not a whole, non-negative/);
    assert.throws(() => parseDuration(Number.NaN), /not a whole/);
    assert.throws(() => parseDuration({}), /expected a number of ms or a duration string/);
  });

  it("reads no unit from Object.prototype: '5constructor' is not a duration", () => {
    for (const bad of ['5constructor', '1toString', '2valueOf', '3__proto__']) {
      assert.throws(() => parseDuration(bad), /is not a duration; use a number of ms/, bad);
    }
  });

  it('bounds the text it reads', () => {
    const long = '1s'.repeat(10_000);
    assert.throws(
      () => parseDuration(long),
      (e: unknown) => {
        assert.ok(isSluiceError(e, 'ERR_SLUICE_INVALID_DURATION'));
        assert.ok(e.message.length < 300, 'the message does not echo a huge input');
        return true;
      },
    );
  });
});
