/**
 * The error of a bad middleware option, as most of the middleware's checks raise it: `ERR_SLUICE_INVALID_OPTION`
 * unless another code is given, in core's `option: why` form.
 */
import { optionError, type SluiceError, type SluiceErrorCode } from '../core/errors.js';

/** `optionError(code, option, why)` with ERR_SLUICE_INVALID_OPTION as the code unless given. */
export function invalidOption(
  option: string,
  why: string,
  code: SluiceErrorCode = 'ERR_SLUICE_INVALID_OPTION',
): SluiceError {
  return optionError(code, option, why);
}
