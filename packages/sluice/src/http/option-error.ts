/**
 * The error of a bad option, in the form every option check of the middleware uses: the option's path, a colon, what
 * is wrong and what to do; the path again in `option`, for programs.
 */
import { SluiceError, type SluiceErrorCode } from '../core/errors.js';

/** `new SluiceError(code, '<option>: <why>', { option })`; the code is ERR_SLUICE_INVALID_OPTION unless given. */
export function optionError(
  option: string,
  why: string,
  code: SluiceErrorCode = 'ERR_SLUICE_INVALID_OPTION',
): SluiceError {
  return new SluiceError(code, `${option}: ${why}`, { option });
}
