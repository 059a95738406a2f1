/** The allow and deny lists: entries by descriptor key and value or by client address range, bounded in size. */
import { randomUUID } from 'node:crypto';
import { isIP } from 'node:net';
import { SluiceError } from 'sluice';
import { createIpBlockMap } from 'sluice/http';

/** Which list an entry belongs to: `allow` answers OK without counting, `deny` answers OVER_LIMIT. */
export type ListName = 'allow' | 'deny';

/** What a caller gives to add an entry. */
export interface AccessEntryInput {
  /** The value to match: an exact descriptor value or key, an IP address, or a CIDR (`10.0.0.0/8`). */
  value: string;
  /**
   * The descriptor key whose value must match (e.g. `remote_address`, `api_key`). Absent: any entry of
   * any descriptor, any `/v1/check` key, and the gateway's client address.
   */
  key?: string;
  /** Only requests of this domain. Absent: every domain (and `/v1/check`, which has none). */
  domain?: string;
  /** Free text for people (why the entry exists). */
  note?: string;
}

/** An entry of a list. */
export interface AccessEntry extends AccessEntryInput {
  readonly id: string;
  readonly list: ListName;
  readonly createdAt: string;
}

/** The allow and deny lists of a running service. Changes take effect on the next request. */
export interface AccessLists {
  add(list: ListName, input: AccessEntryInput): AccessEntry;
  /** Removes an entry by id; false when there is none. */
  remove(list: ListName, id: string): boolean;
  list(list: ListName): AccessEntry[];
  /** Total entries in both lists; 0 lets the request paths skip matching altogether. */
  readonly size: number;
  /**
   * Which list matches one descriptor entry (or a `/v1/check` key with `key = 'key'`, or a client address
   * with `key = 'remote_address'`) in `domain`; deny wins over allow.
   */
  match(domain: string, key: string, value: string): ListName | undefined;
}

/** Most entries the two lists hold together: admin is authenticated, but memory must stay bounded anyway. */
export const MAX_ACCESS_ENTRIES = 100_000;
const MAX_FIELD_LENGTH = 1024;

/** Entries of one value kept in a plain list; past this many, they are counted by scope instead. */
const FEW = 8;

/**
 * The entries of one value (or block), answering "does one apply to this domain and key?". Almost
 * every value has one entry, kept as is; a value listed more than FEW times (say for many domains)
 * switches to counts by scope — domain → key → count, '' for "any" (validation refuses empty domains
 * and keys, so '' is free) — where a lookup asks four fixed questions however many entries there are.
 */
class Scopes {
  private few: AccessEntry[] | undefined = [];
  /** domain → key → count, once the value has more than FEW entries. */
  private many: Map<string, Map<string, number>> | undefined;

  add(entry: AccessEntry): void {
    if (this.few !== undefined && this.few.length < FEW) {
      this.few.push(entry);
      return;
    }
    for (const e of this.few ?? []) this.count(e, 1);
    this.few = undefined;
    this.count(entry, 1);
  }

  /** Removes an entry; true when none is left. */
  remove(entry: AccessEntry): boolean {
    if (this.few !== undefined) {
      const i = this.few.indexOf(entry);
      if (i !== -1) this.few.splice(i, 1);
      return this.few.length === 0;
    }
    this.count(entry, -1);
    return this.many?.size === 0;
  }

  applies(domain: string, key: string): boolean {
    if (this.few !== undefined) {
      return this.few.some(
        (e) => (e.domain === undefined || e.domain === domain) && (e.key === undefined || e.key === key),
      );
    }
    const specific = this.many?.get(domain);
    const any = this.many?.get('');
    return specific?.has(key) === true || specific?.has('') === true || any?.has(key) === true || any?.has('') === true;
  }

  private count(entry: AccessEntry, delta: 1 | -1): void {
    const domain = entry.domain ?? '';
    const key = entry.key ?? '';
    this.many ??= new Map();
    let byKey = this.many.get(domain);
    if (byKey === undefined) {
      byKey = new Map();
      this.many.set(domain, byKey);
    }
    const n = (byKey.get(key) ?? 0) + delta;
    if (n > 0) byKey.set(key, n);
    else {
      byKey.delete(key);
      if (byKey.size === 0) this.many.delete(domain);
    }
  }
}

/** One list, indexed: exact values in a map, addresses and CIDR blocks in a prefix table. */
class IndexedList {
  readonly entries = new Map<string, AccessEntry>();
  private readonly exact = new Map<string, Scopes>();
  private readonly networks = createIpBlockMap<Scopes>();

  add(entry: AccessEntry): void {
    this.entries.set(entry.id, entry);
    // Exact matching also applies to addresses, so `value: 10.0.0.1` matches the literal string too.
    let scopes = this.exact.get(entry.value);
    if (scopes === undefined) {
      scopes = new Scopes();
      this.exact.set(entry.value, scopes);
    }
    scopes.add(entry);
    const network = parseNetwork(entry.value);
    if (network === undefined) return;
    let inTable = this.networks.get(network);
    if (inTable === undefined) {
      inTable = new Scopes();
      this.networks.set(network, inTable);
    }
    inTable.add(entry);
  }

  remove(id: string): boolean {
    const entry = this.entries.get(id);
    if (entry === undefined) return false;
    this.entries.delete(id);
    if (this.exact.get(entry.value)?.remove(entry)) this.exact.delete(entry.value);
    const network = parseNetwork(entry.value);
    if (network !== undefined && this.networks.get(network)?.remove(entry)) this.networks.delete(network);
    return true;
  }

  matches(domain: string, key: string, value: string): boolean {
    if (this.exact.get(value)?.applies(domain, key)) return true;
    if (this.networks.size === 0) return false;
    return isIP(value) !== 0 && this.networks.some(value, (scopes) => scopes.applies(domain, key));
  }
}

/**
 * Creates empty allow/deny lists. Values that are IP addresses or CIDRs match any address inside them
 * (IPv4-mapped IPv6 addresses count as IPv4); other values match exactly. Matching costs the same with
 * 100,000 entries as with one (a map for values, a prefix table for blocks), and adding or removing an
 * entry touches only that entry.
 * @example lists.add('deny', { key: 'api_key', value: 'leaked-key' });
 */
export function createAccessLists(): AccessLists {
  const lists: Record<ListName, IndexedList> = { allow: new IndexedList(), deny: new IndexedList() };
  const total = () => lists.allow.entries.size + lists.deny.entries.size;

  return {
    add(list, input) {
      const entry: AccessEntry = { ...validate(input), id: randomUUID(), list, createdAt: new Date().toISOString() };
      if (total() >= MAX_ACCESS_ENTRIES) {
        throw new SluiceError(
          'ERR_SLUICE_LIST_FULL',
          `the allow and deny lists hold at most ${MAX_ACCESS_ENTRIES} entries`,
        );
      }
      lists[list].add(entry);
      return entry;
    },
    remove: (list, id) => lists[list].remove(id),
    list: (list) => [...lists[list].entries.values()],
    get size() {
      return total();
    },
    match(domain, key, value) {
      if (total() === 0) return undefined;
      if (lists.deny.matches(domain, key, value)) return 'deny';
      if (lists.allow.matches(domain, key, value)) return 'allow';
      return undefined;
    },
  };
}

/** An address or CIDR entry as its block's text; undefined for any other value (or a prefix too long). */
function parseNetwork(text: string): string | undefined {
  const slash = text.indexOf('/');
  // Only a plain address (node's isIP), not the host:port forms the block map also reads.
  const family = isIP(slash === -1 ? text : text.slice(0, slash));
  if (family === 0) return undefined;
  if (slash === -1) return text;
  const bits = text.slice(slash + 1);
  return /^\d{1,3}$/.test(bits) && Number(bits) <= (family === 4 ? 32 : 128) ? text : undefined;
}

function validate(input: AccessEntryInput): AccessEntryInput {
  if (input === null || typeof input !== 'object' || Array.isArray(input)) {
    throw new SluiceError(
      'ERR_SLUICE_INVALID_REQUEST',
      'entry: expected an object {"value": ..., "key"?: ..., "domain"?: ...}',
    );
  }
  const out: AccessEntryInput = { value: field(input, 'value', true) as string };
  for (const name of ['key', 'domain', 'note'] as const) {
    const v = field(input, name, false);
    if (v !== undefined) out[name] = v;
  }
  for (const name of Object.keys(input)) {
    if (!['value', 'key', 'domain', 'note'].includes(name)) {
      throw new SluiceError('ERR_SLUICE_INVALID_REQUEST', `${name}: unknown field (known: value, key, domain, note)`);
    }
  }
  if (
    input.value.includes('/') &&
    parseNetwork(input.value) === undefined &&
    isIP(input.value.split('/')[0] ?? '') !== 0
  ) {
    throw new SluiceError('ERR_SLUICE_INVALID_REQUEST', `value: '${input.value}' is not a valid CIDR`);
  }
  return out;
}

function field(input: AccessEntryInput, name: keyof AccessEntryInput, required: boolean): string | undefined {
  const v = input[name];
  if (v === undefined && !required) return undefined;
  if (typeof v !== 'string' || v === '' || v.length > MAX_FIELD_LENGTH) {
    throw new SluiceError(
      'ERR_SLUICE_INVALID_REQUEST',
      `${name}: expected a non-empty string of at most ${MAX_FIELD_LENGTH} characters`,
    );
  }
  return v;
}
