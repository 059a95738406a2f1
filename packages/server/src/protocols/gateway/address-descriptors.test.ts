import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type HttpDomainDescriptors, parseRules, type RuleSet } from 'sluice/rules';
import { AddressDescriptors } from './address-descriptors.js';

function ruleSet(actions: string): RuleSet {
  const text = `domain: edge
descriptors:
  - key: remote_address
    rate_limit: { unit: second, requests_per_unit: 10 }
http:
  rate_limits:
    - actions: ${actions}
`;
  const loaded = parseRules([{ file: 'rules.yaml', text }]);
  assert.ok(loaded.ok, JSON.stringify(loaded));
  return loaded.ruleSet;
}

const groups: HttpDomainDescriptors[] = [
  { domain: 'edge', descriptors: [{ entries: [{ key: 'remote_address', value: '10.0.0.1' }] }] },
];

describe('AddressDescriptors', () => {
  it('remembers the descriptors of each client key when the rules read only the client address', () => {
    const rules = ruleSet(`[{ remote_address: {} }, { generic_key: { descriptor_value: api } }]`);
    const cache = new AddressDescriptors();
    assert.equal(cache.get(rules, '10.0.0.1'), undefined);
    cache.set('10.0.0.1', groups);
    assert.equal(cache.get(rules, '10.0.0.1'), groups);
    assert.equal(cache.get(rules, '10.0.0.2'), undefined);
  });

  it('remembers nothing when a rule reads the request (a header, the path, the method)', () => {
    for (const action of [
      `[{ request_headers: { header_name: x-api-key, descriptor_key: key } }]`,
      `[{ remote_address: {} }, { path: { descriptor_key: path } }]`,
      `[{ method: { descriptor_key: method } }]`,
    ]) {
      const rules = ruleSet(action);
      const cache = new AddressDescriptors();
      assert.equal(cache.get(rules, '10.0.0.1'), undefined);
      cache.set('10.0.0.1', groups);
      assert.equal(cache.get(rules, '10.0.0.1'), undefined, action);
    }
  });

  it('starts over with a new rule set (a reload)', () => {
    const cache = new AddressDescriptors();
    const before = ruleSet(`[{ remote_address: {} }]`);
    assert.equal(cache.get(before, '10.0.0.1'), undefined);
    cache.set('10.0.0.1', groups);
    assert.equal(cache.get(ruleSet(`[{ remote_address: {} }]`), '10.0.0.1'), undefined);
  });

  it('holds at most its bound of client keys', () => {
    const rules = ruleSet(`[{ remote_address: {} }]`);
    const cache = new AddressDescriptors(2);
    assert.equal(cache.get(rules, 'a'), undefined);
    cache.set('a', groups);
    cache.set('b', groups);
    cache.set('c', groups);
    assert.equal(cache.get(rules, 'a'), undefined);
    assert.equal(cache.get(rules, 'c'), groups);
  });
});
