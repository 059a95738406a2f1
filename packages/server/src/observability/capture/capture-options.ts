/** `sluice serve --capture`'s options, their defaults and bounds, checked before anything is opened. */
import { SluiceError } from 'sluice';

/** What to capture and where (`sluice serve --capture DIR ...`). */
export interface CaptureOptions {
  /** Directory of the NDJSON files (created when missing). */
  readonly dir: string;
  /**
   * Share of keys captured, 0..1: a key (domain and descriptors) is in or out for good, so a replay sees
   * every request of the keys it has. @default DEFAULT_CAPTURE_SAMPLE
   */
  readonly sample?: number;
  /** Most bytes of capture files in `dir`; the oldest files are deleted past it. @default DEFAULT_CAPTURE_MAX_BYTES */
  readonly maxBytes?: number;
  /** Write descriptor values as they are; otherwise each becomes a keyed hash (HMAC with `secret`). @default false */
  readonly rawKeys?: boolean;
  /**
   * The HMAC key of hashed values (16 bytes or more); give the same one to every instance and restart to keep
   * one hash per value across captures. @default 32 random bytes, new in each process
   */
  readonly secret?: string | Uint8Array;
}

/** One key in ten. */
export const DEFAULT_CAPTURE_SAMPLE = 0.1;
/** 256 MiB on disk, all capture files together. */
export const DEFAULT_CAPTURE_MAX_BYTES = 256 * 1024 * 1024;
/** The smallest budget: a few files of whole records. */
export const MIN_CAPTURE_MAX_BYTES = 64 * 1024;
/** The largest budget (1 TiB): a typo of a unit, not a plan. */
export const MAX_CAPTURE_MAX_BYTES = 2 ** 40;

function invalid(option: string, message: string): SluiceError {
  return new SluiceError('ERR_SLUICE_INVALID_OPTION', `capture.${option}: ${message}`, { option: `capture.${option}` });
}

/** Throws ERR_SLUICE_INVALID_OPTION for a capture option out of its bounds. */
export function checkCaptureOptions(options: CaptureOptions): void {
  if (typeof options.dir !== 'string' || options.dir === '') throw invalid('dir', 'expected a directory');
  const { sample, maxBytes, secret } = options;
  if (sample !== undefined && !(typeof sample === 'number' && sample >= 0 && sample <= 1)) {
    throw invalid('sample', 'expected a share from 0 to 1');
  }
  if (
    maxBytes !== undefined &&
    !(Number.isInteger(maxBytes) && maxBytes >= MIN_CAPTURE_MAX_BYTES && maxBytes <= MAX_CAPTURE_MAX_BYTES)
  ) {
    throw invalid('maxBytes', `expected a whole number of bytes from ${MIN_CAPTURE_MAX_BYTES} to 2^40`);
  }
  if (secret !== undefined && Buffer.byteLength(secret) < 16) throw invalid('secret', 'use at least 16 bytes');
}
