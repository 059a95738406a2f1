/**
 * A whole number as a script argument in hexadecimal. Lua's `tonumber(s, 16)` reads it with C's
 * strtoul, where a decimal argument goes through glibc's strtod, several times dearer in Redis. Only
 * for numbers that are whole and ≥ 0 (every number of a ResolvedPolicy, costs, counts).
 */
export function hexArg(n: number): string {
  if (!Number.isSafeInteger(n) || n < 0) throw new RangeError(`sluice: expected a whole number ≥ 0, got ${n}`);
  return n.toString(16);
}
