/**
 * A table from CIDR blocks to values, the index behind the allow and deny lists: a lookup costs one hash probe per
 * prefix length in use, however many blocks it holds.
 */
import type { Cidr, IpBytes } from './ip.js';

/**
 * A table of CIDR blocks → values, answering "which blocks contain this address?" in time that does
 * not depend on how many blocks it holds: one hash lookup per distinct prefix length in use (at most
 * 129, in practice a handful: /32, /24, /128, /64), each on the address masked to that length. This is
 * the hash-per-prefix-length form of a binary prefix trie (Waldvogel et al., "Scalable High Speed IP
 * Routing Lookups", 1997): the same answer as walking a trie's 128 levels, without a node per bit, so
 * 100,000 blocks cost 100,000 map entries. Adding and removing a block is one map operation; nothing
 * is rebuilt.
 *
 * Pure (no `node:*`), so the HTTP middleware can use it on any runtime.
 */
export class IpPrefixTable<V> {
  /** Prefix length (0–128, over the 128-bit space) → masked prefix (as a key) → value. */
  private readonly byLength = new Map<number, Map<string, V>>();
  /** The lengths in `byLength`, kept as a small array: lookups iterate it on every match. */
  private lengths: number[] = [];
  private count = 0;

  /** Number of blocks held. */
  get size(): number {
    return this.count;
  }

  /** The value stored for exactly this block, if any. */
  get(cidr: Cidr): V | undefined {
    return this.byLength.get(cidr.bits)?.get(prefixKey(cidr.bytes, cidr.bits));
  }

  /** Stores `value` for this block (replacing what was there). */
  set(cidr: Cidr, value: V): void {
    let table = this.byLength.get(cidr.bits);
    if (table === undefined) {
      table = new Map();
      this.byLength.set(cidr.bits, table);
      this.lengths = [...this.byLength.keys()];
    }
    const key = prefixKey(cidr.bytes, cidr.bits);
    if (!table.has(key)) this.count++;
    table.set(key, value);
  }

  /** Removes this block; false when it was not there. */
  delete(cidr: Cidr): boolean {
    const table = this.byLength.get(cidr.bits);
    if (table === undefined || !table.delete(prefixKey(cidr.bytes, cidr.bits))) return false;
    this.count--;
    if (table.size === 0) {
      this.byLength.delete(cidr.bits);
      this.lengths = [...this.byLength.keys()];
    }
    return true;
  }

  /** Calls `visit` with the value of every block containing the address until it returns true; true if one did. */
  some(address: IpBytes, visit: (value: V) => boolean): boolean {
    for (const bits of this.lengths) {
      const value = (this.byLength.get(bits) as Map<string, V>).get(prefixKey(address, bits));
      if (value !== undefined && visit(value)) return true;
    }
    return false;
  }
}

/**
 * The first `bits` bits of an address as a string key: whole bytes as char codes, then the partial
 * byte masked. Only bytes inside the prefix are read, so a block's bytes need not be masked already.
 */
function prefixKey(bytes: IpBytes, bits: number): string {
  const whole = bits >> 3;
  let key = '';
  for (let i = 0; i < whole; i++) key += String.fromCharCode(bytes[i] as number);
  const rest = bits & 7;
  if (rest !== 0) key += String.fromCharCode((bytes[whole] as number) & ((0xff << (8 - rest)) & 0xff));
  return key;
}
