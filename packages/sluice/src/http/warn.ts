/**
 * Warnings about configurations that are probably mistaken: each says what was seen and the fix, and
 * is given once per process per code (a warning on every request would drown the log it is meant for).
 * On Node they are process warnings (`process.on('warning')`, `--no-warnings`, `--trace-warnings`);
 * where there is no `process` (workers, Deno without compat) they go to `console.warn`.
 */

/** The codes of sluice's warnings (errors are `ERR_SLUICE_*`; warnings are not errors). */
export type SluiceWarningCode =
  | 'SLUICE_UNTRUSTED_FORWARDED_HEADER'
  | 'SLUICE_PERMISSIVE_TRUST_PROXY'
  | 'SLUICE_MISSING_KEY_SKIPPED'
  | 'SLUICE_PERIOD_LOOKS_LIKE_SECONDS'
  | `SLUICE_${string}`;

const given = new Set<string>();

interface WarningProcess {
  emitWarning(message: string, options: { type: string; code: string }): void;
}

/**
 * Emits a warning unless one with the same `code` (and `once` discriminator) was already emitted.
 * @returns true when it was emitted now.
 */
export function warnOnce(code: SluiceWarningCode, message: string, once: string = code): boolean {
  if (given.has(once)) return false;
  given.add(once);
  const proc = (globalThis as { process?: Partial<WarningProcess> }).process;
  if (typeof proc?.emitWarning === 'function') proc.emitWarning(message, { type: 'SluiceWarning', code });
  else console.warn(`SluiceWarning [${code}]: ${message}`);
  return true;
}

/** True when a warning of that discriminator has been given (lets hot paths stop looking). */
export function warned(once: string): boolean {
  return given.has(once);
}
