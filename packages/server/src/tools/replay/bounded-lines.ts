/**
 * Splits a byte stream into lines without ever holding more than `maxLine` bytes of one: a longer line is
 * skipped to its end and reported as `null` (readline would buffer it whole first, however long it is).
 */

/** The lines of `chunks` (UTF-8, `\n` or `\r\n`), `null` for each line over `maxLine` bytes; a last line without `\n` too. */
export async function* boundedLines(
  chunks: AsyncIterable<Buffer | string> | Iterable<Buffer | string>,
  maxLine: number,
): AsyncGenerator<string | null> {
  let parts: Buffer[] = [];
  let held = 0;
  let skipping = false;
  const take = (piece: Buffer) => {
    if (skipping) return;
    if (held + piece.length > maxLine + 1) {
      // +1: a `\r` before the `\n` is not part of the line.
      skipping = true;
      parts = [];
      held = 0;
      return;
    }
    parts.push(piece);
    held += piece.length;
  };
  const end = (): string | null => {
    const line = skipping ? null : Buffer.concat(parts, held).toString('utf8').replace(/\r$/, '');
    parts = [];
    held = 0;
    skipping = false;
    return line !== null && line.length > maxLine ? null : line;
  };
  for await (const chunk of chunks) {
    const buf = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
    let start = 0;
    for (let nl = buf.indexOf(10, start); nl !== -1; nl = buf.indexOf(10, start)) {
      take(buf.subarray(start, nl));
      yield end();
      start = nl + 1;
    }
    if (start < buf.length) take(buf.subarray(start));
  }
  if (held > 0 || skipping) yield end();
}
