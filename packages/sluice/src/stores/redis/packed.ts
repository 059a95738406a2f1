/**
 * Numbers as one binary argument: little-endian doubles, which a script reads with Redis's
 * `struct.unpack` in C. As text, each number is an argument of its own that Lua parses with
 * `tonumber` (glibc's strtod, about a microsecond of Redis time apiece).
 */
export function packDoubles(numbers: readonly number[]): Buffer {
  const out = Buffer.alloc(8 * numbers.length);
  for (let i = 0; i < numbers.length; i++) out.writeDoubleLE(numbers[i] as number, 8 * i);
  return out;
}
