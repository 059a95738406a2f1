/**
 * The requests of a replay, interned: each distinct request (a domain and its descriptors, or a `/v1/check` key
 * and policy) is read and named once, then every record of it refers to the same ReplayKey — its descriptors
 * for the engine, its per-key tally, its suggestion counters — so a million records parse a few thousand keys.
 */
import type { RequestDescriptor } from 'sluice/rules';
import {
  type CapturedCheck,
  type CaptureEntry,
  checkOf,
  entriesOf,
  isCheckRecord,
  type ReplayRecord,
} from './capture-record.js';
import type { ScannedLine } from './capture-scan.js';
import type { WindowCounts } from './recommend.js';
import { type ReplayTally, tallyOf } from './replay-tally.js';

/** One distinct request of a replay. */
export interface ReplayKey {
  /** The per-key table's name: `domain|key=value,…;…`, or `check|key` for a `/v1/check` item. */
  readonly name: string;
  /** Shared by every key of the same name; set at its first decision (see ReplayKeys.tallyOf). */
  tally: ReplayTally | undefined;
  readonly domain: string;
  /** A descriptor record's descriptors; undefined for a check. */
  readonly descriptors: RequestDescriptor[] | undefined;
  /** A `/v1/check` item; undefined for a descriptor record. */
  readonly check: CapturedCheck | undefined;
  /** Per descriptor (one for a check): the key the suggestions count it under. */
  readonly parts: readonly string[];
  /** The JSON text it was read from (as in the line, or as JSON.stringify writes it). */
  readonly text: string;
  /** Per descriptor: the rule and counters it was last counted under (the same the next time, mostly). */
  readonly lastRule: (string | undefined)[];
  readonly lastCounts: (WindowCounts | undefined)[];
}

/** The per-key table's name of a request. */
export function requestKey(record: ReplayRecord): string {
  if (isCheckRecord(record)) return `check|${record.check.key}`;
  const ds = record.descriptors.map((d) => d.entries.map((e) => `${e.key}=${e.value}`).join(','));
  return `${record.domain}|${ds.join(';')}`;
}

/** A string of its own, not a slice of a larger one (UTF-8 round trip: the text came from UTF-8). */
const flat = (s: string): string => Buffer.from(s, 'utf8').toString('utf8');

/** Interns requests; `tallies` holds the per-key table by name. */
export class ReplayKeys {
  readonly tallies = new Map<string, ReplayTally>();
  /** domain (`''` for checks) -> the descriptors' (or check's) JSON text -> key. */
  private readonly byText = new Map<string, Map<string, ReplayKey>>();
  private lastDomain: string | undefined;
  private lastTexts: Map<string, ReplayKey> | undefined;

  /** The key of a parsed record. */
  ofRecord(record: ReplayRecord): ReplayKey {
    if (isCheckRecord(record)) return this.intern('', JSON.stringify(record.check), record);
    return this.intern(record.domain, JSON.stringify(record.descriptors), record);
  }

  /** The key of a scanned line; undefined when its raw text is not a valid value (the line is read again in full). */
  ofScan(line: ScannedLine): ReplayKey | undefined {
    const domain = line.domain ?? '';
    if (domain !== this.lastDomain || this.lastTexts === undefined) {
      this.lastDomain = domain;
      this.lastTexts = this.textsOf(domain);
    }
    // A slice of the line: V8 hashes it natively, faster than any hash written here.
    const text = line.line.slice(line.rawStart, line.rawEnd);
    return this.lastTexts.get(text) ?? this.read(line, domain, text);
  }

  private read(line: ScannedLine, domain: string, text: string): ReplayKey | undefined {
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch {
      return undefined;
    }
    if (line.kind === 'check') {
      const check = checkOf(value);
      if (typeof check === 'string') return undefined;
      return this.intern('', text, { t: 0, check, cost: 1, outcome: 'OK' });
    }
    if (!Array.isArray(value) || value.length === 0) return undefined;
    const read = value.map(entriesOf);
    if (read.some((e) => e === undefined)) return undefined;
    const descriptors = (read as CaptureEntry[][]).map((entries) => ({ entries }));
    return this.intern(domain, text, { t: 0, domain, descriptors, cost: 1, outcome: 'OK' });
  }

  /** The tally of `key`, entered in the per-key table once a request of it was decided (not before: it may not be). */
  tallyOf(key: ReplayKey): ReplayTally {
    key.tally ??= tallyOf(this.tallies, key.name);
    return key.tally;
  }

  private textsOf(domain: string): Map<string, ReplayKey> {
    let texts = this.byText.get(domain);
    if (texts === undefined) {
      texts = new Map();
      this.byText.set(flat(domain), texts);
    }
    return texts;
  }

  private intern(sliced: string, slicedText: string, record: ReplayRecord): ReplayKey {
    const texts = this.textsOf(sliced);
    const known = texts.get(slicedText);
    if (known !== undefined) return known;
    // Copies: a slice of a line keeps the whole chunk it was decoded from (a MiB) alive.
    const domain = flat(sliced);
    const text = flat(slicedText);
    const name = requestKey(record);
    const check = isCheckRecord(record) ? record.check : undefined;
    const descriptors = isCheckRecord(record)
      ? undefined
      : record.descriptors.map((d) => ({ entries: d.entries.map((e) => ({ key: e.key, value: e.value })) }));
    // JSON of the parts: unambiguous, whatever the values hold (`,`, `=`, `;` or `|`).
    const parts =
      check === undefined
        ? (descriptors ?? []).map((d) => JSON.stringify([domain, d.entries.map((e) => [e.key, e.value])]))
        : [JSON.stringify(['', check.key])];
    const key: ReplayKey = {
      name,
      text,
      tally: undefined,
      domain,
      descriptors,
      check,
      parts,
      lastRule: parts.map(() => undefined),
      lastCounts: parts.map(() => undefined),
    };
    texts.set(text, key);
    return key;
  }
}
