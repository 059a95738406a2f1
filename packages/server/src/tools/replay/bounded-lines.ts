/**
 * Splits a byte stream into lines without ever holding more than `maxLine` bytes of one: a longer line is
 * skipped to its end and reported as `null` (readline would buffer it whole first, however long it is).
 */

/** The splitter's state across chunks: the start of a line the last chunk did not finish. */
class Carry {
  private parts: Buffer[] = [];
  private held = 0;
  private skipping = false;

  constructor(private readonly maxLine: number) {}

  get pending(): boolean {
    return this.held > 0 || this.skipping;
  }

  take(piece: Buffer): void {
    if (this.skipping) return;
    if (this.held + piece.length > this.maxLine + 1) {
      // +1: a `\r` before the `\n` is not part of the line.
      this.skipping = true;
      this.parts = [];
      this.held = 0;
      return;
    }
    this.parts.push(piece);
    this.held += piece.length;
  }

  end(): string | null {
    const line = this.skipping ? null : Buffer.concat(this.parts, this.held).toString('utf8').replace(/\r$/, '');
    this.parts = [];
    this.held = 0;
    this.skipping = false;
    return line !== null && line.length > this.maxLine ? null : line;
  }
}

/** Pushes the lines of `text` (whole lines, without their last `\n`) to `out`, the bound checked as Carry does. */
function splitWhole(text: string, maxLine: number, out: (string | null)[]): void {
  let start = 0;
  for (;;) {
    const nl = text.indexOf('\n', start);
    let line = nl === -1 ? text.slice(start) : text.slice(start, nl);
    // UTF-8 takes at most 3 bytes per UTF-16 unit: only a line that may be over the bound is measured.
    const tooLong = line.length * 3 > maxLine + 1 && Buffer.byteLength(line) > maxLine + 1;
    if (line.charCodeAt(line.length - 1) === 13) line = line.slice(0, -1);
    out.push(tooLong || line.length > maxLine ? null : line);
    if (nl === -1) return;
    start = nl + 1;
  }
}

/**
 * The lines of `chunks` (UTF-8, `\n` or `\r\n`) a chunk's worth at a time, `null` for each line over
 * `maxLine` bytes; a last line without `\n` too. The whole lines of a chunk are decoded as one string:
 * one await and one decode per chunk, not per line (a million lines is then a few hundred awaits).
 */
export async function* boundedLineBatches(
  chunks: AsyncIterable<Buffer | string> | Iterable<Buffer | string>,
  maxLine: number,
): AsyncGenerator<(string | null)[]> {
  const carry = new Carry(maxLine);
  for await (const chunk of chunks) {
    const buf = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
    const first = buf.indexOf(10);
    if (first === -1) {
      carry.take(buf);
      continue;
    }
    const out: (string | null)[] = [];
    carry.take(buf.subarray(0, first));
    out.push(carry.end());
    const last = buf.lastIndexOf(10);
    // A `\n` byte is never inside a multi-byte character, so the lines between decode as one string.
    if (last > first) splitWhole(buf.toString('utf8', first + 1, last), maxLine, out);
    if (last + 1 < buf.length) carry.take(buf.subarray(last + 1));
    yield out;
  }
  if (carry.pending) yield [carry.end()];
}

/** The lines of `chunks` one at a time — see {@link boundedLineBatches}. */
export async function* boundedLines(
  chunks: AsyncIterable<Buffer | string> | Iterable<Buffer | string>,
  maxLine: number,
): AsyncGenerator<string | null> {
  for await (const batch of boundedLineBatches(chunks, maxLine)) yield* batch;
}
