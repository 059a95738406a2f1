import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { type Cidr, cidrContains, formatIp, parseCidr, parseIp } from './ip.js';
import { IpPrefixTable } from './ip-prefix-table.js';

/** A random block: IPv4 or IPv6 bytes with a prefix length over the 128-bit space. */
const cidrArb = fc
  .tuple(fc.boolean(), fc.uint8Array({ minLength: 16, maxLength: 16 }), fc.nat())
  .map(([v4, bytes, n]): Cidr => {
    if (v4) {
      bytes.fill(0, 0, 10);
      bytes[10] = 0xff;
      bytes[11] = 0xff;
    }
    const bits = v4 ? 96 + (n % 33) : n % 129;
    return parseCidr(`${formatIp(bytes)}/${v4 ? bits - 96 : bits}`) as Cidr;
  });

describe('IpPrefixTable', () => {
  it('finds exactly the blocks a linear scan finds, through adds and deletes (differential)', () => {
    fc.assert(
      fc.property(
        fc.array(cidrArb, { maxLength: 40 }),
        fc.array(fc.nat(), { maxLength: 10 }),
        fc.array(cidrArb, { minLength: 1, maxLength: 20 }),
        (blocks, deletions, probes) => {
          const table = new IpPrefixTable<Cidr>();
          const naive = new Map<string, Cidr>();
          const id = (c: Cidr) => `${formatIp(c.bytes)}/${c.bits}`;
          for (const b of blocks) {
            table.set(b, b);
            naive.set(id(b), b);
          }
          for (const d of deletions) {
            const b = blocks[d % Math.max(1, blocks.length)];
            if (b === undefined) continue;
            assert.equal(table.delete(b), naive.delete(id(b)));
          }
          assert.equal(table.size, naive.size);
          // Probe the blocks' own addresses (with random low bits) as well as random ones.
          for (const probe of [...probes, ...blocks].map((c) => c.bytes)) {
            const found = new Set<string>();
            table.some(probe, (c) => {
              found.add(id(c));
              return false;
            });
            const expected = new Set([...naive.values()].filter((c) => cidrContains(c, probe)).map(id));
            assert.deepEqual(found, expected);
          }
        },
      ),
      { seed: 1212, numRuns: 300 },
    );
  });

  it('holds 100,000 blocks and answers for each, and deletes one without touching the others', () => {
    const table = new IpPrefixTable<number>();
    for (let i = 0; i < 100_000; i++) {
      table.set(parseCidr(`10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`) as Cidr, i);
    }
    table.set(parseCidr('2001:db8::/32') as Cidr, -1);
    assert.equal(table.size, 100_001);
    const hit = (ip: string) => {
      let value: number | undefined;
      table.some(parseIp(ip) as Uint8Array, (v) => {
        value = v;
        return true;
      });
      return value;
    };
    assert.equal(hit('10.1.134.159'), 99_999);
    assert.equal(hit('10.2.0.0'), undefined);
    assert.equal(hit('::ffff:10.0.0.7'), 7);
    assert.equal(hit('2001:db8:ffff::1'), -1);
    assert.equal(table.delete(parseCidr('10.0.0.7') as Cidr), true);
    assert.equal(hit('10.0.0.7'), undefined);
    assert.equal(hit('10.0.0.8'), 8);
    assert.equal(table.delete(parseCidr('10.0.0.7') as Cidr), false);
  });
});
