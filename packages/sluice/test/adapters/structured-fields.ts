/**
 * A small RFC 9651 (Structured Field Values for HTTP) parser for Lists, written for the tests so the
 * rate-limit headers are checked against the RFC's grammar rather than against our own serializer.
 * It follows the parsing algorithms of RFC 9651 §4.2; Dates and Display Strings are included.
 */

/** A bare item. Tokens, byte sequences and display strings are wrapped to tell them from strings. */
export type BareItem =
  | number
  | string
  | boolean
  | { token: string }
  | { bytes: string }
  | { date: number }
  | { display: string };

export type Parameters = Map<string, BareItem>;
export interface Item {
  value: BareItem;
  params: Parameters;
}
export interface InnerList {
  items: Item[];
  params: Parameters;
}
export type ListMember = Item | InnerList;

export class StructuredFieldError extends Error {}

class Parser {
  i = 0;
  constructor(readonly s: string) {}

  fail(why: string): never {
    throw new StructuredFieldError(`${why} at ${this.i} in ${JSON.stringify(this.s)}`);
  }
  peek(): string {
    return this.s[this.i] ?? '';
  }
  eof(): boolean {
    return this.i >= this.s.length;
  }
  skipSP(): void {
    while (this.peek() === ' ') this.i++;
  }
  skipOWS(): void {
    while (this.peek() === ' ' || this.peek() === '\t') this.i++;
  }

  // §4.2.1
  list(): ListMember[] {
    const members: ListMember[] = [];
    while (!this.eof()) {
      members.push(this.itemOrInnerList());
      this.skipOWS();
      if (this.eof()) return members;
      if (this.peek() !== ',') this.fail('expected a comma');
      this.i++;
      this.skipOWS();
      if (this.eof()) this.fail('trailing comma');
    }
    return members;
  }

  itemOrInnerList(): ListMember {
    return this.peek() === '(' ? this.innerList() : this.item();
  }

  // §4.2.1.2
  innerList(): InnerList {
    this.i++;
    const items: Item[] = [];
    while (!this.eof()) {
      this.skipSP();
      if (this.peek() === ')') {
        this.i++;
        return { items, params: this.parameters() };
      }
      items.push(this.item());
      if (this.peek() !== ' ' && this.peek() !== ')') this.fail('expected a space or )');
    }
    return this.fail('unterminated inner list');
  }

  // §4.2.3
  item(): Item {
    const value = this.bareItem();
    return { value, params: this.parameters() };
  }

  // §4.2.3.1
  bareItem(): BareItem {
    const c = this.peek();
    if (c === '-' || (c >= '0' && c <= '9')) return this.number();
    if (c === '"') return this.string();
    if (c === '*' || /[A-Za-z]/.test(c)) return { token: this.token() };
    if (c === ':') return { bytes: this.byteSequence() };
    if (c === '?') return this.boolean();
    if (c === '@') {
      this.i++;
      const n = this.number();
      if (!Number.isInteger(n)) this.fail('a date must be an integer');
      return { date: n };
    }
    if (c === '%') return { display: this.displayString() };
    return this.fail('unrecognised bare item');
  }

  // §4.2.3.2
  parameters(): Parameters {
    const params: Parameters = new Map();
    while (this.peek() === ';') {
      this.i++;
      this.skipSP();
      const key = this.key();
      let value: BareItem = true;
      if (this.peek() === '=') {
        this.i++;
        value = this.bareItem();
      }
      params.set(key, value);
    }
    return params;
  }

  // §4.2.3.3
  key(): string {
    const c = this.peek();
    if (!(c === '*' || (c >= 'a' && c <= 'z'))) this.fail('a key must start with a-z or *');
    let out = '';
    while (/[a-z0-9_\-.*]/.test(this.peek()) && !this.eof()) out += this.s[this.i++];
    return out;
  }

  // §4.2.4
  number(): number {
    let sign = 1;
    if (this.peek() === '-') {
      sign = -1;
      this.i++;
    }
    if (!/[0-9]/.test(this.peek())) this.fail('expected a digit');
    let text = '';
    let decimal = false;
    while (!this.eof()) {
      const c = this.peek();
      if (/[0-9]/.test(c)) text += c;
      else if (c === '.' && !decimal) {
        if (text.length > 12) this.fail('too many integer digits in a decimal');
        decimal = true;
        text += c;
      } else break;
      this.i++;
      if (!decimal && text.length > 15) this.fail('an integer has at most 15 digits');
      if (decimal && text.length > 16) this.fail('a decimal has at most 16 characters');
    }
    if (decimal) {
      if (text.endsWith('.')) this.fail('a decimal needs a fraction');
      if ((text.split('.')[1] as string).length > 3) this.fail('a decimal has at most 3 fraction digits');
    }
    return sign * Number(text);
  }

  // §4.2.5
  string(): string {
    this.i++;
    let out = '';
    while (!this.eof()) {
      const c = this.s[this.i++] as string;
      if (c === '\\') {
        const next = this.s[this.i++];
        if (next !== '"' && next !== '\\') this.fail('bad escape in a string');
        out += next;
      } else if (c === '"') {
        return out;
      } else {
        const code = c.charCodeAt(0);
        if (code < 0x20 || code > 0x7e) this.fail('a string holds printable ASCII only');
        out += c;
      }
    }
    return this.fail('unterminated string');
  }

  // §4.2.6
  token(): string {
    let out = '';
    while (!this.eof() && /[!#$%&'*+\-.^_`|~0-9A-Za-z:/]/.test(this.peek())) out += this.s[this.i++];
    return out;
  }

  // §4.2.7
  byteSequence(): string {
    this.i++;
    const end = this.s.indexOf(':', this.i);
    if (end === -1) this.fail('unterminated byte sequence');
    const b64 = this.s.slice(this.i, end);
    if (!/^[A-Za-z0-9+/=]*$/.test(b64)) this.fail('bad base64');
    this.i = end + 1;
    return b64;
  }

  // §4.2.8
  boolean(): boolean {
    this.i++;
    const c = this.s[this.i++];
    if (c === '1') return true;
    if (c === '0') return false;
    return this.fail('a boolean is ?0 or ?1');
  }

  // §4.2.10
  displayString(): string {
    this.i++;
    if (this.s[this.i++] !== '"') this.fail('a display string starts with %"');
    const bytes: number[] = [];
    while (!this.eof()) {
      const c = this.s[this.i++] as string;
      if (c === '%') {
        const hex = this.s.slice(this.i, this.i + 2);
        if (!/^[0-9a-f]{2}$/.test(hex)) this.fail('bad percent-encoding');
        bytes.push(Number.parseInt(hex, 16));
        this.i += 2;
      } else if (c === '"') {
        return new TextDecoder('utf-8', { fatal: true }).decode(new Uint8Array(bytes));
      } else {
        bytes.push(c.charCodeAt(0));
      }
    }
    return this.fail('unterminated display string');
  }
}

/** Parses a header value as an RFC 9651 List (§4.2: leading and trailing spaces are discarded). */
export function parseList(value: string): ListMember[] {
  const parser = new Parser(value.replace(/^ +| +$/g, ''));
  return parser.list();
}

/** Parses a header value that must be a List of exactly one Item. */
export function parseSingleItem(value: string): Item {
  const list = parseList(value);
  if (list.length !== 1 || 'items' in (list[0] as ListMember)) {
    throw new StructuredFieldError(`expected one item, got ${JSON.stringify(value)}`);
  }
  return list[0] as Item;
}
