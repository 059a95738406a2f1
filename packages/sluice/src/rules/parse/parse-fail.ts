/** Parsing a rule's `fail:` field: the failure policy (open, closed or insurance) that applies when the store fails. */
import { RULE_ISSUE_CODES as C } from '../codes.js';
import type { FailMode } from '../types.js';
import type { Field, Reader } from './reader.js';

const FAIL_MODES: readonly FailMode[] = ['open', 'closed', 'insurance'];

/** Validates a `fail:` field. */
export function parseFail(r: Reader, field: Field, path: string): FailMode | undefined {
  const raw = r.string(field, path);
  if (raw === undefined) return undefined;
  if ((FAIL_MODES as readonly string[]).includes(raw)) return raw as FailMode;
  r.report(C.invalidValue, `${path}: '${raw}' is not a failure policy; use open, closed or insurance`, field.at);
  return undefined;
}
