import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { asUnitRate, parseUnit, UNIT_MS } from './units.js';

describe('units', () => {
  it('parses envoy units in any case', () => {
    assert.equal(parseUnit('minute'), 'MINUTE');
    assert.equal(parseUnit('WEEK'), 'WEEK');
    assert.equal(parseUnit('Fortnight'), undefined);
    assert.equal(parseUnit('unknown'), undefined);
    assert.equal(parseUnit(3), undefined);
  });

  it('divides time as envoy ratelimit does: a month is 30 days, a year 365', () => {
    assert.equal(UNIT_MS.MONTH, 30 * 86_400_000);
    assert.equal(UNIT_MS.YEAR, 365 * 86_400_000);
  });

  it('expresses any period as a rate per unit that never reads as "blocked"', () => {
    assert.deepEqual(asUnitRate(60, 60_000), { requestsPerUnit: 60, unit: 'MINUTE' });
    assert.deepEqual(asUnitRate(100, 300_000), { requestsPerUnit: 20, unit: 'MINUTE' });
    assert.deepEqual(asUnitRate(5, 500), { requestsPerUnit: 10, unit: 'SECOND' });
    assert.deepEqual(asUnitRate(1, 300_000), { requestsPerUnit: 12, unit: 'HOUR' });
    assert.deepEqual(asUnitRate(0, 300_000), { requestsPerUnit: 0, unit: 'HOUR' });
  });
});
