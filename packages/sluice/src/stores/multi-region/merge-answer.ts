/**
 * What a peer's Redis answers to an escrow push (escrow-lua.ts, MERGE), checked before any of it is
 * credited here: a peer that is not a Redis running sluice's script (a wrong URL, a proxy, a hostile
 * or broken server) can answer anything that parses as RESP, and each field is passed on to this
 * region's own Redis as a number of units.
 */
import { SluiceError } from '../../core/errors.js';

/** Fields per record of a MERGE answer: inc, units given, to, at, share, demand. */
export const ANSWER_FIELDS = 6;

/** Longest incarnation id a record holds (newIncarnation(): two base-36 numbers and a dash). */
const MAX_ID = 64;

const isId = (v: unknown, empty: boolean) => typeof v === 'string' && v.length <= MAX_ID && (empty || v !== '');
const isWhole = (v: unknown) => typeof v === 'number' && Number.isSafeInteger(v) && v >= 0;

/**
 * Returns `answer` as the array it must be — per record an incarnation, a whole number of units given
 * (running total), the incarnation they were given to, and three whole numbers — or throws
 * `ERR_SLUICE_MULTI_REGION_BAD_REPLY` saying which field of which record was wrong.
 */
export function checkMergeAnswer(answer: unknown, records: number, region: string): unknown[] {
  const bad = (what: string) =>
    new SluiceError(
      'ERR_SLUICE_MULTI_REGION_BAD_REPLY',
      `region ${region} answered a sync with ${what}: nothing of it was credited; check that its --region-peer URL ` +
        "is that region's Redis (the sync retries with backoff)",
    );
  if (!Array.isArray(answer)) throw bad(`a ${answer === null ? 'null' : typeof answer}, not a list`);
  if (answer.length !== records * ANSWER_FIELDS) {
    throw bad(`${answer.length} fields for ${records} records (expected ${records * ANSWER_FIELDS})`);
  }
  for (let i = 0; i < answer.length; i += ANSWER_FIELDS) {
    const [inc, units, to, at, share, demand] = answer.slice(i, i + ANSWER_FIELDS);
    const record = i / ANSWER_FIELDS + 1;
    if (!isId(inc, false) || !isId(to, true)) throw bad(`record ${record}: an incarnation that is not an id`);
    if (!isWhole(units) || !isWhole(at) || !isWhole(share) || !isWhole(demand)) {
      throw bad(`record ${record}: a field that is not a whole number`);
    }
  }
  return answer;
}
