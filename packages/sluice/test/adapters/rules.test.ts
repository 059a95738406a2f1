/**
 * Limits from rules (`sluice/rules`): the `http:` section turns each request into descriptors, the
 * engine decides them, and every adapter answers with the same headers and 429 as for inline limits.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createManualClock } from '../../src/core/clock.js';
import type { LimitedEvent } from '../../src/http/index.js';
import { createRulesEngine, parseRules } from '../../src/rules/index.js';
import { HARNESSES } from './harness.js';
import { pick, readHeaders, T0 } from './suite.js';

const YAML = `
domain: api
descriptors:
  - key: remote_address
    rate_limit: { unit: minute, requests_per_unit: 2, name: per-ip }
  - key: key
    rate_limit: { unit: second, requests_per_unit: 1, name: per-key }
  - key: generic_key
    value: everyone
    shadow_mode: true
    rate_limit: { unit: minute, requests_per_unit: 1, name: trial }
http:
  rate_limits:
    - actions:
        - remote_address: {}
    - actions:
        - request_headers: { header_name: x-api-key, descriptor_key: key }
    - actions:
        - generic_key: { descriptor_value: everyone }
`;

function engine() {
  const parsed = parseRules([{ file: 'api.yaml', text: YAML }]);
  if (!parsed.ok) throw new Error(JSON.stringify(parsed.issues));
  return createRulesEngine({ ruleSet: parsed.ruleSet, clock: createManualClock(T0) });
}

describe('limits from rules', () => {
  for (const harness of HARNESSES) {
    it(harness.name, async () => {
      const rules = engine();
      const events: LimitedEvent<unknown>[] = [];
      const server = await harness.start({ rules, onLimited: (e) => events.push(e) });
      const get = async (headers: Record<string, string> = {}) => {
        const res = await fetch(server.url, { headers });
        return { status: res.status, headers: res.headers, body: await res.text() };
      };
      try {
        const r1 = await get();
        assert.equal(r1.status, 200);
        assert.deepEqual(readHeaders(r1), { name: 'per-ip', limit: 2, remaining: 1, resetS: 60, windowS: 60 });
        const r2 = await get({ 'x-api-key': 'k' });
        assert.equal(r2.status, 200);
        // per-ip and per-key both have 0 left: the later reset (per-ip) is described.
        assert.equal(pick(r2).ratelimit, '"per-ip";r=0;t=60');
        const r3 = await get({ 'x-api-key': 'k' });
        assert.equal(r3.status, 429);
        assert.equal(r3.headers.get('retry-after'), '60');
        assert.equal(JSON.parse(r3.body).error.code, 'RATE_LIMIT_EXCEEDED');
        assert.deepEqual(
          events.map((e) => [e.limitName, e.shadow]),
          [
            ['trial', true],
            ['trial', true],
            ['per-ip', false],
          ],
          'the shadow rule reports, never rejects',
        );
      } finally {
        await server.close();
        await rules.close();
      }
    });
  }

  it('rules exclude inline limits, keys and a store', async () => {
    const { createHttpLimiter } = await import('../../src/http/index.js');
    const access = {
      peer: () => '',
      header: () => undefined,
      method: () => 'GET',
      url: () => '/',
      headers: () => ({}),
    };
    assert.throws(
      () => createHttpLimiter({ rules: engine(), limit: 5, period: '1s' }, access),
      /rules: .*drop limit, period/,
    );
    assert.throws(() => createHttpLimiter({ rules: {} as never }, access), /rules: expected a rules engine/);
  });
});
