import { SluiceError } from '../core/errors.js';
import { type Cidr, cidrContains, formatIp, parseCidr, parseIp } from '../core/ip.js';

/**
 * An allow or deny list of IP addresses, CIDR blocks and keys, changeable while the server runs.
 * An entry that parses as an address or a CIDR block matches the client's address; any other entry
 * is a key and matches a request one of whose limit keys equals it.
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
  const addresses = new Set<string>();
  const blocks = new Map<string, Cidr>();

  function classify(entry: string): { cidr?: Cidr; address?: string } {
    const cidr = parseCidr(entry);
    if (cidr === undefined) return {};
    return cidr.bits === 128 ? { address: formatIp(cidr.bytes) } : { cidr };
  }

  const list: AccessList = {
    add(entry) {
      if (typeof entry !== 'string' || entry.trim() === '') {
        throw new SluiceError(
          'ERR_SLUICE_INVALID_OPTION',
          `access list: entry ${String(entry)} is not a non-empty string`,
        );
      }
      entry = entry.trim();
      raw.add(entry);
      const { cidr, address } = classify(entry);
      if (address !== undefined) addresses.add(address);
      else if (cidr !== undefined) blocks.set(entry, cidr);
      else keys.add(entry);
    },
    delete(entry) {
      entry = entry.trim();
      if (!raw.delete(entry)) return false;
      const { cidr, address } = classify(entry);
      if (address !== undefined) {
        // Another spelling of the same address may still be listed.
        if (![...raw].some((e) => classify(e).address === address)) addresses.delete(address);
      } else if (cidr !== undefined) blocks.delete(entry);
      else keys.delete(entry);
      return true;
    },
    entries: () => [...raw],
    matchesIp(ip) {
      if (addresses.size === 0 && blocks.size === 0) return false;
      const bytes = parseIp(ip);
      if (bytes === undefined) return false;
      if (addresses.has(formatIp(bytes))) return true;
      for (const cidr of blocks.values()) if (cidrContains(cidr, bytes)) return true;
      return false;
    },
    matchesKey: (key) => keys.has(key),
    get hasIps() {
      return addresses.size > 0 || blocks.size > 0;
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
