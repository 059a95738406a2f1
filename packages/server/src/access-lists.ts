import { randomUUID } from 'node:crypto';
import { BlockList, isIP } from 'node:net';
import { SluiceError } from 'sluice';

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

interface Compiled {
  /** value → entries with that exact value. */
  readonly exact: Map<string, AccessEntry[]>;
  /** CIDR and address entries, each with its own block list (one per entry keeps key/domain scoping). */
  readonly networks: { entry: AccessEntry; blocks: BlockList }[];
}

/**
 * Creates empty allow/deny lists. Values that are IP addresses or CIDRs match any address inside them
 * (IPv4-mapped IPv6 addresses count as IPv4); other values match exactly.
 * @example lists.add('deny', { key: 'api_key', value: 'leaked-key' });
 */
export function createAccessLists(): AccessLists {
  const entries: Record<ListName, AccessEntry[]> = { allow: [], deny: [] };
  const compiled: Record<ListName, Compiled> = { allow: compile([]), deny: compile([]) };
  let size = 0;

  const recompile = (list: ListName) => {
    compiled[list] = compile(entries[list]);
    size = entries.allow.length + entries.deny.length;
  };

  return {
    add(list, input) {
      const entry: AccessEntry = { ...validate(input), id: randomUUID(), list, createdAt: new Date().toISOString() };
      if (size >= MAX_ACCESS_ENTRIES) {
        throw new SluiceError(
          'ERR_SLUICE_LIST_FULL',
          `the allow and deny lists hold at most ${MAX_ACCESS_ENTRIES} entries`,
        );
      }
      entries[list] = [...entries[list], entry];
      recompile(list);
      return entry;
    },
    remove(list, id) {
      const before = entries[list].length;
      entries[list] = entries[list].filter((e) => e.id !== id);
      if (entries[list].length === before) return false;
      recompile(list);
      return true;
    },
    list: (list) => [...entries[list]],
    get size() {
      return size;
    },
    match(domain, key, value) {
      if (size === 0) return undefined;
      if (matches(compiled.deny, domain, key, value)) return 'deny';
      if (matches(compiled.allow, domain, key, value)) return 'allow';
      return undefined;
    },
  };
}

function applies(entry: AccessEntry, domain: string, key: string): boolean {
  return (entry.domain === undefined || entry.domain === domain) && (entry.key === undefined || entry.key === key);
}

function matches(c: Compiled, domain: string, key: string, value: string): boolean {
  const exact = c.exact.get(value);
  if (exact?.some((e) => applies(e, domain, key))) return true;
  if (c.networks.length === 0) return false;
  const address = normalizeAddress(value);
  if (address === undefined) return false;
  return c.networks.some((n) => applies(n.entry, domain, key) && n.blocks.check(address.ip, address.family));
}

function compile(list: readonly AccessEntry[]): Compiled {
  const exact = new Map<string, AccessEntry[]>();
  const networks: Compiled['networks'] = [];
  for (const entry of list) {
    const network = parseNetwork(entry.value);
    if (network !== undefined) {
      const blocks = new BlockList();
      blocks.addSubnet(network.ip, network.prefix, network.family);
      networks.push({ entry, blocks });
    }
    // Exact matching also applies to addresses, so `value: 10.0.0.1` matches the literal string too.
    exact.set(entry.value, [...(exact.get(entry.value) ?? []), entry]);
  }
  return { exact, networks };
}

type Family = 'ipv4' | 'ipv6';

function normalizeAddress(text: string): { ip: string; family: Family } | undefined {
  const v = isIP(text);
  if (v === 4) return { ip: text, family: 'ipv4' };
  if (v === 6) {
    const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(text);
    if (mapped && isIP(mapped[1] as string) === 4) return { ip: mapped[1] as string, family: 'ipv4' };
    return { ip: text, family: 'ipv6' };
  }
  return undefined;
}

function parseNetwork(text: string): { ip: string; prefix: number; family: Family } | undefined {
  const slash = text.indexOf('/');
  const address = normalizeAddress(slash === -1 ? text : text.slice(0, slash));
  if (address === undefined) return undefined;
  const max = address.family === 'ipv4' ? 32 : 128;
  if (slash === -1) return { ...address, prefix: max };
  const prefixText = text.slice(slash + 1);
  if (!/^\d{1,3}$/.test(prefixText)) return undefined;
  const prefix = Number(prefixText);
  return prefix <= max ? { ...address, prefix } : undefined;
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
