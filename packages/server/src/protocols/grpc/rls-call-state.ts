/** One lean ShouldRateLimit call while its request arrives: the bytes so far and its receive budget. */
import type { IncomingHttpHeaders, ServerHttp2Stream } from 'node:http2';
import type { Reception } from './receive-guard.js';

/** Where a stream keeps its call (a symbol: nothing else on the stream can clash with it). */
export const CALL = Symbol('sluice.rlsCall');

/** A stream with its call. */
export type CallStream = ServerHttp2Stream & { [CALL]: RlsCall };

/** The request bytes of one call (most requests are one chunk: `first`, no array). */
export class RlsCall {
  first: Buffer | undefined = undefined;
  more: Buffer[] | undefined = undefined;
  size = 0;
  cut = false;
  reception!: Reception;

  constructor(
    readonly stream: ServerHttp2Stream,
    readonly headers: IncomingHttpHeaders,
  ) {}

  add(chunk: Buffer): void {
    this.size += chunk.length;
    if (this.first === undefined) this.first = chunk;
    else if (this.more === undefined) this.more = [chunk];
    else this.more.push(chunk);
  }

  /** The bytes so far and `next`, in one buffer. */
  concat(next: Buffer): Buffer {
    return Buffer.concat([this.first as Buffer, ...(this.more ?? []), next], this.size + next.length);
  }

  /** The whole body, handed over: the call holds it no more. */
  take(): Buffer {
    const body =
      this.first === undefined
        ? Buffer.alloc(0)
        : this.more === undefined
          ? this.first
          : Buffer.concat([this.first, ...this.more], this.size);
    this.first = undefined;
    this.more = undefined;
    return body;
  }

  /** The request broke a bound: drop its bytes and its budget; nothing more is read. */
  drop(): void {
    this.cut = true;
    this.first = undefined;
    this.more = undefined;
    this.reception.release();
  }
}
