/** createIpBlockMap: blocks as text, one block however it is spelled, and which blocks hold an address. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createIpBlockMap } from './ip-block-map.js';

describe('createIpBlockMap', () => {
  it('finds every block that holds an address, IPv4-mapped IPv6 included', () => {
    const map = createIpBlockMap<string>();
    assert.equal(map.set('10.0.0.0/8', 'ten'), true);
    assert.equal(map.set('10.1.0.0/16', 'ten-one'), true);
    assert.equal(map.set('2001:db8::/32', 'doc'), true);
    const seen = (address: string) => {
      const out: string[] = [];
      map.some(address, (v) => {
        out.push(v);
        return false;
      });
      return out.sort();
    };
    assert.deepEqual(seen('10.1.2.3'), ['ten', 'ten-one']);
    assert.deepEqual(seen('::ffff:10.9.9.9'), ['ten']);
    assert.deepEqual(seen('2001:db8:1::5'), ['doc']);
    assert.deepEqual(seen('11.0.0.1'), []);
    assert.deepEqual(seen('not an address'), []);
    assert.equal(map.size, 3);
  });

  it('treats spellings of one block as one, and refuses text that is no block', () => {
    const map = createIpBlockMap<number>();
    map.set('10.0.0.1', 1);
    map.set('10.0.0.1/32', 2);
    assert.equal(map.size, 1);
    assert.equal(map.get('::ffff:10.0.0.1'), 2);
    assert.equal(map.set('10.0.0.0/33', 3), false);
    assert.equal(map.set('api-key', 3), false);
    assert.equal(map.get('api-key'), undefined);
    assert.equal(map.delete('10.0.0.1'), true);
    assert.equal(map.delete('10.0.0.1'), false);
    assert.equal(map.size, 0);
  });
});
