/**
 * Splits a byte stream into text lines (LF, CRLF or a lone CR, as server-sent events allow) while
 * holding at most `maxLineBytes` of any line: a longer line is dropped whole and counted, so a hostile
 * or huge event cannot make the reader buffer without bound.
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

/** A `LineReader` calling `onLine` with each line's text (without its line end). */
export function createLineReader(maxLineBytes: number, onLine: (line: string) => void): LineReader {
  const decoder = new TextDecoder('utf-8');
  let parts: Uint8Array[] = [];
  let held = 0;
  let overflow = false;
  let dropped = 0;
  // A CR ends a line; an LF right after it (maybe in the next chunk) belongs to the same line end.
  let afterCr = false;

  const finishLine = () => {
    if (overflow) dropped++;
    else if (parts.length === 1) onLine(decoder.decode(parts[0]));
    else if (parts.length === 0) onLine('');
    else onLine(decoder.decode(joinParts(parts, held)));
    parts = [];
    held = 0;
    overflow = false;
  };
  const keep = (piece: Uint8Array) => {
    if (overflow || piece.length === 0) return;
    if (held + piece.length > maxLineBytes) {
      overflow = true;
      parts = [];
      held = 0;
      return;
    }
    // Copy: the caller may reuse its chunk's memory once push returns.
    parts.push(piece.slice());
    held += piece.length;
  };

  /** Lines ended by LF only, in a chunk with no CR: found by a native search, each decoded in one call. */
  const pushLf = (buf: Uint8Array) => {
    let start = 0;
    for (let i = buf.indexOf(LF); i !== -1; i = buf.indexOf(LF, start)) {
      if (held > 0 || overflow) {
        keep(buf.subarray(start, i));
        finishLine();
      } else if (i - start > maxLineBytes) dropped++;
      else onLine(textOf(decoder, buf, start, i));
      start = i + 1;
    }
    if (start < buf.length) keep(buf.subarray(start));
  };

  return {
    push(chunk) {
      // The usual stream: LF line ends only. A CR anywhere (or one ending the last chunk) takes the byte loop.
      if (!afterCr && chunk.indexOf(CR) === -1) {
        pushLf(chunk);
        return;
      }
      let start = 0;
      for (let i = 0; i < chunk.length; i++) {
        const byte = chunk[i];
        if (byte !== LF && byte !== CR) continue;
        if (byte === LF && afterCr && i === start) {
          afterCr = false;
          start = i + 1;
          continue;
        }
        keep(chunk.subarray(start, i));
        finishLine();
        afterCr = byte === CR;
        start = i + 1;
      }
      if (start < chunk.length) {
        afterCr = false;
        keep(chunk.subarray(start));
      }
    },
    end() {
      if (held > 0 || overflow) finishLine();
    },
    get droppedLines() {
      return dropped;
    },
  };
}

/** Node's Buffer where there is one: it decodes a slice in one call, with no view made for it. */
const NodeBuffer = (globalThis as { Buffer?: typeof Buffer }).Buffer;

/** The UTF-8 text of `buf[start, end)`, without a leading byte-order mark (as TextDecoder reads it). */
function textOf(decoder: TextDecoder, buf: Uint8Array, start: number, end: number): string {
  if (NodeBuffer === undefined || !(buf instanceof NodeBuffer)) return decoder.decode(buf.subarray(start, end));
  const bom = end - start >= 3 && buf[start] === 0xef && buf[start + 1] === 0xbb && buf[start + 2] === 0xbf;
  return buf.toString('utf8', bom ? start + 3 : start, end);
}

function joinParts(parts: readonly Uint8Array[], length: number): Uint8Array {
  const out = new Uint8Array(length);
  let at = 0;
  for (const part of parts) {
    out.set(part, at);
    at += part.length;
  }
  return out;
}
