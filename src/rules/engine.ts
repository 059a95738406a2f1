import { SluiceError } from '../core/errors.js';
import type { RulesEngine, RulesEngineOptions } from './engine-types.js';

/** Creates a rules engine (work in progress: the implementation lands shortly). */
export function createRulesEngine(_options: RulesEngineOptions): RulesEngine {
  throw new SluiceError('ERR_SLUICE_NOT_IMPLEMENTED', 'createRulesEngine: not implemented yet');
}
