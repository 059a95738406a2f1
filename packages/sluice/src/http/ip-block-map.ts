/**
 * A map from IP addresses and CIDR blocks (as text) to values, asked which blocks contain an address: the index to
 * build allow lists, deny lists or per-network settings of your own on, changeable while the server runs.
 */
import { parseCidr, parseIp } from '../core/ip.js';
import { IpPrefixTable } from '../core/ip-prefix-table.js';

/**
 * Addresses and CIDR blocks → values. `'10.0.0.1'`, `'::ffff:10.0.0.1'` and `'10.0.0.1/32'` are one
 * block; an IPv4-mapped IPv6 address is inside the IPv4 blocks that hold its IPv4 form. A lookup costs
 * one hash probe per prefix length in use, however many blocks the map holds.
 */
export interface IpBlockMap<V> {
  /** The value of exactly this block; undefined when it is not there or `block` is not an address or block. */
  get(block: string): V | undefined;
  /** Stores `value` for the block; false (nothing stored) when `block` is not an address or CIDR block. */
  set(block: string, value: V): boolean;
  /** Removes the block; false when it was not there. */
  delete(block: string): boolean;
  /**
   * Calls `visit` with the value of every block containing `address` until it returns true; true if one
   * did. False for text that is not an address.
   */
  some(address: string, visit: (value: V) => boolean): boolean;
  /** How many blocks the map holds. */
  readonly size: number;
}

/**
 * Creates an empty IP block map.
 * @example
 * const limits = createIpBlockMap<number>();
 * limits.set('10.0.0.0/8', 1000);
 * const inside = limits.some('10.1.2.3', (limit) => limit >= 1000); // true
 */
export function createIpBlockMap<V>(): IpBlockMap<V> {
  const table = new IpPrefixTable<V>();
  return {
    get(block) {
      const cidr = parseCidr(block);
      return cidr === undefined ? undefined : table.get(cidr);
    },
    set(block, value) {
      const cidr = parseCidr(block);
      if (cidr === undefined) return false;
      table.set(cidr, value);
      return true;
    },
    delete(block) {
      const cidr = parseCidr(block);
      return cidr !== undefined && table.delete(cidr);
    },
    some(address, visit) {
      if (table.size === 0) return false;
      const bytes = parseIp(address);
      return bytes !== undefined && table.some(bytes, visit);
    },
    get size() {
      return table.size;
    },
  };
}
