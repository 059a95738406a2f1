/**
 * A hand-written protobuf codec for the few RLS v3 messages the service speaks, written from the field
 * numbers in `proto/` (the wire contract). It is several times faster than reflection-based decoding and
 * keeps the hot path free of intermediate objects; `wire.test.ts` checks it against protobufjs (what
 * @grpc/proto-loader uses) on random messages, both ways.
 *
 * Decoded messages have the shape proto-loader gives (camelCase fields, enums by name), so the same
 * validation (`requestFromMessage`) serves both.
 */

import { encodeStruct } from './struct-wire.js';

/** Thrown for bytes that are not a valid message. */
export class WireError extends Error {}

const UNIT_NAMES = ['UNKNOWN', 'SECOND', 'MINUTE', 'HOUR', 'DAY', 'MONTH', 'YEAR', 'WEEK'] as const;
const CODE_NAMES = ['UNKNOWN', 'OK', 'OVER_LIMIT'] as const;
const UNIT_NUMBERS: Record<string, number> = Object.fromEntries(UNIT_NAMES.map((n, i) => [n, i]));
const CODE_NUMBERS: Record<string, number> = Object.fromEntries(CODE_NAMES.map((n, i) => [n, i]));

/** A decoded `RateLimitRequest`. */
export interface WireRequest {
  domain: string;
  descriptors: WireDescriptor[];
  hitsAddend: number;
}

/** A decoded `RateLimitDescriptor`. */
export interface WireDescriptor {
  entries: { key: string; value: string }[];
  limit?: { requestsPerUnit: number; unit: string | number };
  hitsAddend?: { value: number };
}

/** A `RateLimitResponse` to encode (the shape `responseToMessage` builds). */
export interface WireResponse {
  overallCode?: string;
  statuses?: readonly {
    code?: string;
    currentLimit?: { name?: string; requestsPerUnit?: number; unit?: string } | null;
    limitRemaining?: number;
    durationUntilReset?: { seconds?: number; nanos?: number } | null;
  }[];
  responseHeadersToAdd?: readonly { key: string; value: string }[];
}

/**
 * Reads one message. A nested message is read by the same reader, narrowed to it (`enter`/`leave`): no
 * reader and no bounds tuple per field.
 */
class Reader {
  pos: number;
  end: number;
  constructor(
    readonly buf: Buffer,
    start: number,
    end: number,
  ) {
    this.pos = start;
    this.end = end;
  }

  varint(): number {
    let result = 0;
    let shift = 0;
    for (;;) {
      if (this.pos >= this.end) throw new WireError('truncated varint');
      const byte = this.buf[this.pos++] as number;
      if (shift < 28) result |= (byte & 0x7f) << shift;
      else result += (byte & 0x7f) * 2 ** shift;
      if (byte < 0x80) break;
      shift += 7;
      if (shift > 63) throw new WireError('varint too long');
    }
    // Bits above 31 were added as a float: `result` may be negative from the `|=` part only when the
    // varint has exactly 32 bits; fix it to the unsigned value.
    return result < 0 ? result + 2 ** 32 : result;
  }

  /**
   * A `uint32` field: the low 32 bits of a varint of up to 10 bytes, as protobufjs and the C++ runtime
   * read it (2^64 - 1 is 4294967295, not 0). Longer varints are malformed.
   */
  uint32(): number {
    let result = 0;
    for (let i = 0; ; i++) {
      if (this.pos >= this.end) throw new WireError('truncated varint');
      if (i >= 10) throw new WireError('varint too long');
      const byte = this.buf[this.pos++] as number;
      if (i < 4) result |= (byte & 0x7f) << (7 * i);
      else if (i === 4) result |= (byte & 0x0f) << 28;
      if (byte < 0x80) break;
    }
    return result >>> 0;
  }

  /** Reads a length-delimited field's length; returns where its bytes end (checked against the message's end). */
  private fieldEnd(): number {
    const length = this.varint();
    const end = this.pos + length;
    if (end > this.end) throw new WireError('length-delimited field runs past the message');
    return end;
  }

  /** Narrows the reader to the nested message that starts here; returns the outer end, for `leave`. */
  enter(): number {
    const outer = this.end;
    this.end = this.fieldEnd();
    return outer;
  }

  /** Back to the enclosing message, past the nested one. */
  leave(outer: number): void {
    this.pos = this.end;
    this.end = outer;
  }

  string(): string {
    const end = this.fieldEnd();
    const start = this.pos;
    this.pos = end;
    return this.buf.toString('utf8', start, end);
  }

  skip(wireType: number): void {
    switch (wireType) {
      case 0:
        this.varint();
        return;
      case 1:
        this.pos += 8;
        break;
      case 2:
        this.pos = this.fieldEnd();
        return;
      case 5:
        this.pos += 4;
        break;
      default:
        throw new WireError(`unsupported wire type ${wireType}`);
    }
    if (this.pos > this.end) throw new WireError('truncated field');
  }
}

/** Decodes a `RateLimitRequest`. @throws WireError on malformed bytes. */
export function decodeRateLimitRequest(buf: Buffer): WireRequest {
  const r = new Reader(buf, 0, buf.length);
  let domain = '';
  // Lists start as one-element literals: a push onto `[]` allocates room for 17 (most requests have one).
  let descriptors: WireDescriptor[] | undefined;
  let hitsAddend = 0;
  while (r.pos < r.end) {
    const tag = r.varint();
    const field = tag >>> 3;
    const type = tag & 7;
    if (field === 1 && type === 2) domain = r.string();
    else if (field === 2 && type === 2) {
      const outer = r.enter();
      const descriptor = decodeDescriptor(r);
      if (descriptors === undefined) descriptors = [descriptor];
      else descriptors.push(descriptor);
      r.leave(outer);
    } else if (field === 3 && type === 0) hitsAddend = r.uint32();
    else r.skip(type);
  }
  return { domain, descriptors: descriptors ?? [], hitsAddend };
}

/** Decodes the `RateLimitDescriptor` the reader is narrowed to. */
function decodeDescriptor(r: Reader): WireDescriptor {
  const out: WireDescriptor = { entries: EMPTY };
  while (r.pos < r.end) {
    const tag = r.varint();
    const field = tag >>> 3;
    const type = tag & 7;
    if (field === 1 && type === 2) {
      const outer = r.enter();
      const entry = { key: '', value: '' };
      while (r.pos < r.end) {
        const t = r.varint();
        if (t === 10) entry.key = r.string();
        else if (t === 18) entry.value = r.string();
        else r.skip(t & 7);
      }
      r.leave(outer);
      if (out.entries === EMPTY) out.entries = [entry];
      else out.entries.push(entry);
    } else if (field === 2 && type === 2) {
      const outer = r.enter();
      const limit = { requestsPerUnit: 0, unit: 'UNKNOWN' as string | number };
      while (r.pos < r.end) {
        const t = r.varint();
        if (t === 8) limit.requestsPerUnit = r.uint32();
        else if (t === 16) {
          const n = r.varint();
          limit.unit = UNIT_NAMES[n] ?? n;
        } else r.skip(t & 7);
      }
      r.leave(outer);
      out.limit = limit;
    } else if (field === 3 && type === 2) {
      const outer = r.enter();
      const hits = { value: 0 };
      while (r.pos < r.end) {
        const t = r.varint();
        if (t === 8) hits.value = r.varint();
        else r.skip(t & 7);
      }
      r.leave(outer);
      out.hitsAddend = hits;
    } else r.skip(type);
  }
  if (out.entries === EMPTY) out.entries = [];
  return out;
}

/** Stands for "no entries yet" while a descriptor is decoded; never handed out. */
const EMPTY: { key: string; value: string }[] = [];

/**
 * Collects bytes. A nested message is written in place after a one-byte length placeholder
 * (`begin`/`end`); the rare one of 128 bytes or more shifts itself right to make room for a longer
 * length. No buffer per nested message: responses are built with one allocation.
 */
class Writer {
  private buf: Buffer;
  length = 0;
  constructor(size = 256) {
    this.buf = Buffer.allocUnsafe(size);
  }

  private ensure(extra: number): void {
    if (this.length + extra <= this.buf.length) return;
    const bigger = Buffer.allocUnsafe(Math.max(this.buf.length * 2, this.length + extra));
    this.buf.copy(bigger, 0, 0, this.length);
    this.buf = bigger;
  }

  varint(value: number): this {
    this.ensure(10);
    let v = value;
    while (v > 0x7f) {
      this.buf[this.length++] = (v % 128) | 0x80;
      v = Math.floor(v / 128);
    }
    this.buf[this.length++] = v;
    return this;
  }

  /** A varint field, left out when 0 (proto3 defaults are not written). */
  uint(field: number, value: number): this {
    if (value === 0) return this;
    return this.varint(field << 3).varint(value);
  }

  string(field: number, value: string): this {
    if (value === '') return this;
    this.varint((field << 3) | 2);
    const n = value.length;
    if (n < 128) {
      // Short ASCII (header names and values, rule names): copied here, not through two calls into C++
      // (byteLength, write) per string. The length byte goes first; any non-ASCII character falls back.
      this.ensure(n + 1);
      const buf = this.buf;
      let at = this.length + 1;
      let i = 0;
      for (; i < n; i++) {
        const c = value.charCodeAt(i);
        if (c >= 0x80) break;
        buf[at++] = c;
      }
      if (i === n) {
        buf[this.length] = n;
        this.length = at;
        return this;
      }
    }
    const length = Buffer.byteLength(value);
    this.varint(length);
    this.ensure(length);
    this.length += this.buf.write(value, this.length, 'utf8');
    return this;
  }

  message(field: number, nested: Writer): this {
    this.varint((field << 3) | 2).varint(nested.length);
    this.ensure(nested.length);
    nested.buf.copy(this.buf, this.length, 0, nested.length);
    this.length += nested.length;
    return this;
  }

  /** A length-delimited field holding `body` as is. */
  bytes(field: number, body: Buffer): this {
    this.varint((field << 3) | 2).varint(body.length);
    this.ensure(body.length);
    body.copy(this.buf, this.length);
    this.length += body.length;
    return this;
  }

  /** Starts nested message `field`; returns where its content starts, for `end`. */
  begin(field: number): number {
    this.varint((field << 3) | 2);
    this.ensure(1);
    this.length++;
    return this.length;
  }

  /** Ends the nested message started at `start`, writing its length before it. */
  end(start: number): this {
    const length = this.length - start;
    if (length < 128) {
      this.buf[start - 1] = length;
      return this;
    }
    let extra = 0;
    for (let v = length; v >= 128; v = Math.floor(v / 128)) extra++;
    this.ensure(extra);
    this.buf.copyWithin(start + extra, start, this.length);
    let at = start - 1;
    let v = length;
    while (v > 0x7f) {
      this.buf[at++] = (v % 128) | 0x80;
      v = Math.floor(v / 128);
    }
    this.buf[at] = v;
    this.length += extra;
    return this;
  }

  /** The bytes written (a view, not a copy). */
  finish(): Buffer {
    return this.buf.subarray(0, this.length);
  }

  /** Starts over, keeping the buffer unless a large message grew it past 64 KB. */
  reset(): this {
    if (this.buf.length > 64 * 1024) this.buf = Buffer.allocUnsafe(512);
    this.length = 0;
    return this;
  }

  /** The bytes written, copied into a buffer of their own (one allocation: the Writer can be reused). */
  copy(): Buffer {
    const out = Buffer.allocUnsafe(this.length);
    this.buf.copy(out, 0, 0, this.length);
    return out;
  }
}

/**
 * The writer {@link encodeDecisionFrame} builds in, reused from call to call (encoding is synchronous):
 * a frame then costs one buffer, its own, and no writer.
 */
const DECISION_WRITER = new Writer(512);

/**
 * Encodes a `RateLimitResponse` as a gRPC length-prefixed message: 1 byte "not compressed", 4 bytes
 * big-endian length, then the message.
 */
export function encodeRateLimitResponseFrame(response: WireResponse): Buffer {
  const w = new Writer(512);
  // Room for the frame header, filled in once the length is known.
  w.varint(0).varint(0).varint(0).varint(0).varint(0);
  w.uint(1, CODE_NUMBERS[response.overallCode ?? 'UNKNOWN'] ?? 0);
  for (const s of response.statuses ?? []) {
    const status = w.begin(2);
    w.uint(1, CODE_NUMBERS[s.code ?? 'UNKNOWN'] ?? 0);
    const limit = s.currentLimit;
    if (limit !== undefined && limit !== null) {
      const at = w.begin(2);
      w.uint(1, limit.requestsPerUnit ?? 0)
        .uint(2, UNIT_NUMBERS[limit.unit ?? 'UNKNOWN'] ?? 0)
        .string(3, limit.name ?? '');
      w.end(at);
    }
    w.uint(3, s.limitRemaining ?? 0);
    const d = s.durationUntilReset;
    if (d !== undefined && d !== null) {
      const at = w.begin(4);
      w.uint(1, d.seconds ?? 0).uint(2, d.nanos ?? 0);
      w.end(at);
    }
    w.end(status);
  }
  for (const h of response.responseHeadersToAdd ?? []) {
    const at = w.begin(3);
    w.string(1, h.key).string(2, h.value);
    w.end(at);
  }
  const frame = w.finish();
  frame[0] = 0;
  frame.writeUInt32BE(frame.length - 5, 1);
  return frame;
}

/** A decided response as the rules engine and the decider give it (what {@link encodeDecisionFrame} reads). */
export interface DecisionResponse {
  readonly overallCode: string;
  readonly statuses: readonly {
    readonly code: string;
    readonly currentLimit?: { readonly name?: string; readonly requestsPerUnit: number; readonly unit: string };
    readonly limitRemaining: number;
    readonly durationUntilResetMs: number;
  }[];
  readonly headers: Readonly<Record<string, string>>;
  /** `dynamic_metadata` (envoy ratelimit's RESPONSE_DYNAMIC_METADATA), when asked for. */
  readonly dynamicMetadata?: Readonly<Record<string, unknown>>;
}

const UINT32_MAX = 4294967295;
const clampUint32 = (n: number) => (Number.isFinite(n) ? Math.min(UINT32_MAX, Math.max(0, Math.floor(n))) : UINT32_MAX);

/**
 * Encodes a decided response straight into a gRPC frame, with the same bytes as
 * `encodeRateLimitResponseFrame(responseToMessage(decided))` but no intermediate message objects: the
 * service's hot path.
 */
export function encodeDecisionFrame(response: DecisionResponse): Buffer {
  const w = DECISION_WRITER.reset();
  w.varint(0).varint(0).varint(0).varint(0).varint(0);
  w.uint(1, CODE_NUMBERS[response.overallCode] ?? 0);
  for (const s of response.statuses) {
    const status = w.begin(2);
    w.uint(1, CODE_NUMBERS[s.code] ?? 0);
    const limit = s.currentLimit;
    if (limit !== undefined) {
      const at = w.begin(2);
      w.uint(1, clampUint32(limit.requestsPerUnit))
        .uint(2, UNIT_NUMBERS[limit.unit] ?? 0)
        .string(3, limit.name ?? '');
      w.end(at);
    }
    w.uint(3, clampUint32(s.limitRemaining));
    if (limit !== undefined) {
      const ms = Math.max(0, Math.ceil(s.durationUntilResetMs));
      const at = w.begin(4);
      w.uint(1, Math.floor(ms / 1000)).uint(2, (ms % 1000) * 1_000_000);
      w.end(at);
    }
    w.end(status);
  }
  for (const key in response.headers) {
    const at = w.begin(3);
    w.string(1, key).string(2, response.headers[key] as string);
    w.end(at);
  }
  if (response.dynamicMetadata !== undefined) w.bytes(6, encodeStruct(response.dynamicMetadata));
  const frame = w.copy();
  frame[0] = 0;
  frame.writeUInt32BE(frame.length - 5, 1);
  return frame;
}

/** Encodes a `RateLimitResponse` (no frame header). */
export function encodeRateLimitResponse(response: WireResponse): Buffer {
  return encodeRateLimitResponseFrame(response).subarray(5);
}

/** Encodes a `RateLimitRequest` as a gRPC length-prefixed message (for load generators and tests). */
export function encodeRateLimitRequestFrame(request: {
  domain: string;
  descriptors: readonly {
    entries: readonly { key: string; value: string }[];
    limit?: { requestsPerUnit: number; unit: string };
    hitsAddend?: number;
  }[];
  hitsAddend?: number;
}): Buffer {
  const w = new Writer(256);
  w.varint(0).varint(0).varint(0).varint(0).varint(0);
  w.string(1, request.domain);
  for (const d of request.descriptors) {
    const dw = new Writer(128);
    for (const e of d.entries) dw.message(1, new Writer(64).string(1, e.key).string(2, e.value));
    if (d.limit !== undefined) {
      dw.message(2, new Writer(16).uint(1, d.limit.requestsPerUnit).uint(2, UNIT_NUMBERS[d.limit.unit] ?? 0));
    }
    // A wrapper message is written even for 0: its presence is what says "this descriptor's hits".
    if (d.hitsAddend !== undefined) dw.message(3, new Writer(16).uint(1, d.hitsAddend));
    w.message(2, dw);
  }
  w.uint(3, request.hitsAddend ?? 0);
  const frame = w.finish();
  frame[0] = 0;
  frame.writeUInt32BE(frame.length - 5, 1);
  return frame;
}

/** Reads just `overall_code` of a `RateLimitResponse` (what a load generator needs). */
export function decodeOverallCode(buf: Buffer): string {
  const r = new Reader(buf, 0, buf.length);
  while (r.pos < r.end) {
    const tag = r.varint();
    if (tag === 8) return CODE_NAMES[r.varint()] ?? 'UNKNOWN';
    r.skip(tag & 7);
  }
  return 'UNKNOWN';
}
