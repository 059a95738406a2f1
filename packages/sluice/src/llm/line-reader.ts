/**
 * Splits a byte stream into lines (LF, CRLF or a lone CR, as server-sent events allow) while holding at
 * most `maxLineBytes` of any line: a longer line is dropped whole and counted, so a hostile or huge event
 * cannot make the reader buffer without bound. Lines are handed on as bytes, never decoded here: a line
 * inside one chunk is a range of that chunk (no copy), only a line split across chunks is joined.
 */

/** A line splitter fed chunk by chunk. */
export interface LineReader {
  push(chunk: Uint8Array): void;
  /** Flushes a last line that had no line end. */
  end(): void;
  /** Lines dropped for being longer than the bound. */
  readonly droppedLines: number;
}

const LF = 0x0a;
const CR = 0x0d;

/**
 * Called with each line as `bytes[start, end)`, without its line end (or a byte-order mark opening it, as a
 * decoder would drop). The bytes are valid only during the call: they may be the caller's chunk.
 */
export type OnLine = (bytes: Uint8Array, start: number, end: number) => void;

/** A `LineReader` calling `onLine` with each line. */
export function createLineReader(maxLineBytes: number, onLine: OnLine): LineReader {
  return new LineSplitter(maxLineBytes, onLine);
}

class LineSplitter implements LineReader {
  /**
   * A line split across chunks, copied into `pending[0, held)`. One buffer grown by doubling rather than a list of
   * pieces: an upstream sending a line a byte at a time would otherwise cost an object per byte (about 200 MB for a
   * 1 MB line).
   */
  private pending: Uint8Array = EMPTY;
  private held = 0;
  /** The held line passed the bound: it is dropped whole when it ends. */
  private overflow = false;
  private dropped = 0;
  /** A CR ends a line; an LF right after it (maybe in the next chunk) belongs to the same line end. */
  private afterCr = false;

  constructor(
    private readonly maxLineBytes: number,
    private readonly onLine: OnLine,
  ) {}

  get droppedLines(): number {
    return this.dropped;
  }

  push(chunk: Uint8Array): void {
    // The usual stream: LF line ends only. A CR anywhere (or one ending the last chunk) takes the byte loop.
    if (!this.afterCr && chunk.indexOf(CR) === -1) this.pushLf(chunk);
    else this.pushAny(chunk);
  }

  end(): void {
    if (this.held > 0 || this.overflow) this.finishLine();
  }

  /** Lines ended by LF only, in a chunk with no CR: found by a native search, handed on in place. */
  private pushLf(buf: Uint8Array): void {
    let start = 0;
    for (let i = buf.indexOf(LF); i !== -1; i = buf.indexOf(LF, start)) {
      if (this.held > 0 || this.overflow) {
        this.keep(buf.subarray(start, i));
        this.finishLine();
      } else if (i - start > this.maxLineBytes) this.dropped++;
      else this.line(buf, start, i);
      start = i + 1;
    }
    if (start < buf.length) this.keep(buf.subarray(start));
  }

  /** Lines ended by LF, CRLF or CR, byte by byte. */
  private pushAny(chunk: Uint8Array): void {
    let start = 0;
    for (let i = 0; i < chunk.length; i++) {
      const byte = chunk[i];
      if (byte !== LF && byte !== CR) continue;
      if (byte === LF && this.afterCr && i === start) {
        this.afterCr = false;
        start = i + 1;
        continue;
      }
      this.keep(chunk.subarray(start, i));
      this.finishLine();
      this.afterCr = byte === CR;
      start = i + 1;
    }
    if (start < chunk.length) {
      this.afterCr = false;
      this.keep(chunk.subarray(start));
    }
  }

  /** Holds a piece of a line that is not ended yet, while the line is within the bound. */
  private keep(piece: Uint8Array): void {
    if (this.overflow || piece.length === 0) return;
    const size = this.held + piece.length;
    if (size > this.maxLineBytes) {
      this.overflow = true;
      this.pending = EMPTY;
      this.held = 0;
      return;
    }
    if (size > this.pending.length) {
      const grown = new Uint8Array(Math.min(this.maxLineBytes, Math.max(size, 2 * this.pending.length, 256)));
      grown.set(this.pending.subarray(0, this.held));
      this.pending = grown;
    }
    // A copy: the caller may reuse its chunk's memory once push returns.
    this.pending.set(piece, this.held);
    this.held = size;
  }

  /** The held line ended: handed on whole, or counted as dropped. */
  private finishLine(): void {
    if (this.overflow) this.dropped++;
    else this.line(this.pending, 0, this.held);
    // Not reused for the next line: a long line's buffer is not kept for the rest of the stream.
    this.pending = EMPTY;
    this.held = 0;
    this.overflow = false;
  }

  private line(bytes: Uint8Array, start: number, end: number): void {
    const bom = end - start >= 3 && bytes[start] === 0xef && bytes[start + 1] === 0xbb && bytes[start + 2] === 0xbf;
    this.onLine(bytes, bom ? start + 3 : start, end);
  }
}

const EMPTY = new Uint8Array(0);
