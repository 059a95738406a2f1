/**
 * Every error sluice throws carries a stable `code` (`ERR_SLUICE_*`) that programs can match on;
 * the message says what is wrong and what to do. A rejected request is never an error: it is a
 * `Decision` with `allowed: false`.
 */
export type SluiceErrorCode =
  | 'ERR_SLUICE_INVALID_OPTION'
  | 'ERR_SLUICE_UNKNOWN_OPTION'
  | 'ERR_SLUICE_INVALID_ALGORITHM'
  | 'ERR_SLUICE_INVALID_LIMIT'
  | 'ERR_SLUICE_INVALID_PERIOD'
  | 'ERR_SLUICE_INVALID_BURST'
  | 'ERR_SLUICE_INVALID_DURATION'
  | 'ERR_SLUICE_INVALID_COST'
  | 'ERR_SLUICE_INVALID_KEY'
  | 'ERR_SLUICE_INVALID_BLOCK'
  | 'ERR_SLUICE_SLIDING_LOG_TOO_LARGE'
  | 'ERR_SLUICE_INVALID_STORE'
  | 'ERR_SLUICE_STORE_NOT_SYNC'
  | 'ERR_SLUICE_STORE_MISMATCH'
  | 'ERR_SLUICE_STORE_UNAVAILABLE'
  | 'ERR_SLUICE_STORE_TIMEOUT'
  | 'ERR_SLUICE_STORE_CLOSED'
  | 'ERR_SLUICE_LEASE_UNKNOWN'
  // Codes added by other parts of sluice (rules, http, server) extend this union as strings.
  | `ERR_SLUICE_${string}`;

/** The error class of sluice. `code` is stable across versions; `option` names the culprit when one does. */
export class SluiceError extends Error {
  override readonly name = 'SluiceError';
  readonly code: SluiceErrorCode;
  /** The option (dotted path) the error is about, when it is about one. */
  readonly option: string | undefined;

  constructor(code: SluiceErrorCode, message: string, options?: { option?: string; cause?: unknown }) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    this.option = options?.option;
  }
}

/** True when `error` is a SluiceError, optionally with the given code. */
export function isSluiceError(error: unknown, code?: SluiceErrorCode): error is SluiceError {
  return error instanceof SluiceError && (code === undefined || error.code === code);
}

/**
 * The error for an option with a bad value: the message `option: why`, naming the option for programs too;
 * `ERR_SLUICE_INVALID_OPTION` unless a more precise code is given.
 */
export function optionError(
  option: string,
  why: string,
  code: SluiceErrorCode = 'ERR_SLUICE_INVALID_OPTION',
): SluiceError {
  return new SluiceError(code, `${option}: ${why}`, { option });
}

/**
 * What a middleware hands its framework when deciding failed: `error` itself when it is an Error, else a SluiceError
 * (`ERR_SLUICE_DECIDE_FAILED`). An option function may throw or reject with `undefined` or `null`, and a framework reads
 * `next(undefined)` or `done(undefined)` as "go on": the request would pass unlimited (Koa would never answer).
 */
export function asError(error: unknown): Error {
  if (error instanceof Error) return error;
  return new SluiceError('ERR_SLUICE_DECIDE_FAILED', `deciding failed: an option function threw ${String(error)}`, {
    cause: error,
  });
}
