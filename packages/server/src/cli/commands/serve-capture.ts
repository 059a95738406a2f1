/** `sluice serve`'s capture flags: `--capture DIR`, `--capture-sample`, `--capture-max-bytes`, `--capture-raw-keys`. */

import { SluiceError } from 'sluice';
import type { ServiceOptions } from '../../index.js';
import type { CaptureOptions } from '../../observability/capture/capture-options.js';

/** The parseArgs specs of the capture flags. */
export const CAPTURE_FLAGS = {
  capture: { type: 'string' },
  'capture-sample': { type: 'string' },
  'capture-max-bytes': { type: 'string' },
  'capture-raw-keys': { type: 'boolean' },
} as const;

interface CaptureValues {
  capture?: string | undefined;
  'capture-sample'?: string | undefined;
  'capture-max-bytes'?: string | undefined;
  'capture-raw-keys'?: boolean | undefined;
}

const invalid = (message: string) => new SluiceError('ERR_SLUICE_INVALID_OPTION', message);

/** Sets `options.capture` from the flags (the HMAC key from SLUICE_CAPTURE_SECRET); `byteSize` reads `--capture-max-bytes`. */
export function applyCaptureFlags(
  values: CaptureValues,
  env: NodeJS.ProcessEnv,
  options: ServiceOptions,
  byteSize: (text: string, flag: string) => number,
): void {
  const dir = values.capture;
  if (dir === undefined) {
    const stray = (['capture-sample', 'capture-max-bytes', 'capture-raw-keys'] as const).find((f) => values[f]);
    if (stray !== undefined) {
      throw invalid(`--${stray}: applies to a capture; give --capture DIR too`);
    }
    return;
  }
  if (dir.trim() === '') throw invalid('--capture: expected a directory');
  const capture: { -readonly [K in keyof CaptureOptions]: CaptureOptions[K] } = { dir };
  const sampleText = values['capture-sample'];
  if (sampleText !== undefined) {
    const sample = /^\s*(0|1|0?\.\d{1,9}|1\.0*)\s*$/.test(sampleText) ? Number(sampleText) : Number.NaN;
    if (!(sample >= 0 && sample <= 1)) {
      throw invalid(`--capture-sample: '${sampleText.slice(0, 40)}' is not a share from 0 to 1 (e.g. 0.01)`);
    }
    capture.sample = sample;
  }
  const maxText = values['capture-max-bytes'];
  if (maxText !== undefined) capture.maxBytes = byteSize(maxText, '--capture-max-bytes');
  if (values['capture-raw-keys'] === true) capture.rawKeys = true;
  const secret = env.SLUICE_CAPTURE_SECRET;
  if (secret !== undefined && secret !== '') {
    if (Buffer.byteLength(secret) < 16) {
      throw invalid('SLUICE_CAPTURE_SECRET: use at least 16 bytes');
    }
    capture.secret = secret;
  }
  options.capture = capture;
}
