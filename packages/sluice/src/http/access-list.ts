/**
 * The allow and deny lists of the middleware: addresses, CIDR blocks and keys, matched in time independent of the
 * list's size and changeable while the server runs.
 */
import { SluiceError } from '../core/errors.js';
import { parseCidr, parseIp } from '../core/ip.js';
import { IpPrefixTable } from '../core/ip-prefix-table.js';

/**
 * An allow or deny list of IP addresses, CIDR blocks and keys, changeable while the server runs.
 * An entry that parses as an address or a CIDR block matches the client's address; any other entry
 * is a key and matches a request one of whose limit keys equals it. Matching takes the same time
 * however many entries the list holds, and adding or deleting one changes nothing else.
 */
export interface AccessList {
  /** Adds an entry (`'203.0.113.7'`, `'10.0.0.0/8'`, `'2001:db8::/32'`, `'api-key-123'`). */
  add(entry: string): void;
  /** Removes an entry as it was added; false when it was not there. */
  delete(entry: string): boolean;
  /** The entries, as added. */
  entries(): string[];
  /** True when the address (text) is listed or inside a listed block. */
  matchesIp(ip: string): boolean;
  /** True when the key is listed. */
  matchesKey(key: string): boolean;
  /** True when the list holds at least one address or block (so the address is worth parsing). */
  readonly hasIps: boolean;
  /** True when the list holds at least one key. */
  readonly hasKeys: boolean;
}

/**
 * Creates an access list.
 * @example
 * const deny = createAccessList(['198.51.100.0/24']);
 * app.use(rateLimit({ limit: 100, period: '1m', deny }));
 * deny.add('203.0.113.9'); // takes effect on the next request
 */
export function createAccessList(entries: Iterable<string> = []): AccessList {
  const raw = new Set<string>();
  const keys = new Set<string>();
  // Block → how many listed entries spell it (`10.0.0.1`, `::ffff:10.0.0.1`, `10.0.0.1/32` are one block).
  const blocks = new IpPrefixTable<number>();

  const list: AccessList = {
    add(entry) {
      if (typeof entry !== 'string' || entry.trim() === '') {
        throw new SluiceError(
          'ERR_SLUICE_INVALID_OPTION',
          `access list: entry ${String(entry)} is not a non-empty string`,
        );
      }
      entry = entry.trim();
      if (raw.has(entry)) return;
      raw.add(entry);
      const cidr = parseCidr(entry);
      if (cidr === undefined) keys.add(entry);
      else blocks.set(cidr, (blocks.get(cidr) ?? 0) + 1);
    },
    delete(entry) {
      entry = entry.trim();
      if (!raw.delete(entry)) return false;
      const cidr = parseCidr(entry);
      if (cidr === undefined) keys.delete(entry);
      else {
        const spellings = (blocks.get(cidr) ?? 1) - 1;
        if (spellings === 0) blocks.delete(cidr);
        else blocks.set(cidr, spellings);
      }
      return true;
    },
    entries: () => [...raw],
    matchesIp(ip) {
      if (blocks.size === 0) return false;
      const bytes = parseIp(ip);
      return bytes !== undefined && blocks.some(bytes, () => true);
    },
    matchesKey: (key) => keys.has(key),
    get hasIps() {
      return blocks.size > 0;
    },
    get hasKeys() {
      return keys.size > 0;
    },
  };
  for (const entry of entries) list.add(entry);
  return list;
}

/** True when `value` is an AccessList (rather than an array of entries). */
export function isAccessList(value: unknown): value is AccessList {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as AccessList).matchesIp === 'function' &&
    typeof (value as AccessList).matchesKey === 'function'
  );
}
