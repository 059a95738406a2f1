/**
 * The fields of one limit map, each validated on its own with its issue reported where it is: the time (`unit` or
 * `period`), `requests_per_unit`, `algorithm` and `burst`, and what an unlimited limit must not have.
 */
import { parseDuration } from '../../core/duration.js';
import { ALGORITHMS, type AlgorithmName, isAlgorithmName, isBucketAlgorithm } from '../../core/policy.js';
import { RULE_ISSUE_CODES as C } from '../codes.js';
import type { Unit } from '../types.js';
import { parseUnit, UNIT_MS, UNITS, unitOfPeriod } from '../units.js';
import type { Field, Node, Reader } from './reader.js';

/** The fields of a map, as the reader gives them. */
type Fields = NonNullable<ReturnType<Reader['fields']>>;
/** The path of a field of this map. */
type PathOf = (name: string) => string;

const UNIT_LIST = UNITS.map((u) => u.toLowerCase()).join(', ');

/** An unlimited limit has no unit, period, algorithm or burst (`unit: unknown` aside, as in envoy). */
export function reportUnlimitedExtras(r: Reader, f: Fields, p: PathOf): void {
  // envoy ratelimit refuses a unit with unlimited; a period is our spelling of a unit.
  for (const field of [f.get('unit'), f.get('period')]) {
    if (field !== undefined && !isUnknownUnit(r, field)) {
      r.report(C.unitWithUnlimited, `${p(field.name)}: remove it, an unlimited limit has no unit`, field.at);
    }
  }
  for (const extra of ['algorithm', 'burst'] as const) {
    const field = f.get(extra);
    if (field) r.report(C.conflictingFields, `${p(extra)}: an unlimited limit takes no ${extra}`, field.at);
  }
}

function isUnknownUnit(r: Reader, field: Field): boolean {
  // `unit: unknown` is how envoy's proto spells "no unit"; envoy accepts it with unlimited.
  return field.name === 'unit' && r.string(field, field.name)?.toUpperCase() === 'UNKNOWN';
}

/** The limit's period from `unit` or `period` (exactly one); periodMs undefined when it is missing or invalid. */
export function parseLimitTime(
  r: Reader,
  f: Fields,
  p: PathOf,
  path: string,
  at: Node,
): { periodMs: number | undefined; unit: Unit | undefined } {
  const unitField = f.get('unit');
  const periodField = f.get('period');
  if (unitField && periodField) {
    r.report(C.conflictingFields, `${p('period')}: give either unit or period, not both`, periodField.at);
    return { periodMs: undefined, unit: undefined };
  }
  if (unitField) {
    const raw = r.string(unitField, p('unit'));
    const unit = parseUnit(raw);
    if (unit !== undefined) return { periodMs: UNIT_MS[unit], unit };
    if (raw !== undefined) {
      r.report(C.unknownUnit, `${p('unit')}: '${raw}' is not a unit; use one of ${UNIT_LIST}`, unitField.at);
    }
    return { periodMs: undefined, unit: undefined };
  }
  if (periodField) {
    const raw = r.scalar(periodField, p('period'));
    if (raw === undefined) return { periodMs: undefined, unit: undefined };
    try {
      const periodMs = parseDuration(raw, p('period'));
      if (periodMs < 1) throw new RangeError('zero');
      return { periodMs, unit: unitOfPeriod(periodMs) };
    } catch {
      r.report(
        C.badDuration,
        `${p('period')}: '${raw}' is not a duration; use e.g. '500ms', '10s', '5m', '1h', '1d' or a number of ms ≥ 1`,
        periodField.at,
      );
      return { periodMs: undefined, unit: undefined };
    }
  }
  r.report(C.missingField, `${path}: needs a unit (${UNIT_LIST}) or a period (e.g. '5m')`, at);
  return { periodMs: undefined, unit: undefined };
}

/** `requests_per_unit`: a whole number ≥ 0; undefined when invalid. */
export function parseRequestsPerUnit(r: Reader, f: Fields, p: PathOf): number | undefined {
  // A missing requests_per_unit is 0, which blocks everything: that is what envoy ratelimit does with it.
  const rpuField = f.get('requests_per_unit');
  if (!rpuField) return 0;
  const requestsPerUnit = r.number(rpuField, p('requests_per_unit'));
  if (requestsPerUnit !== undefined && (!Number.isInteger(requestsPerUnit) || requestsPerUnit < 0)) {
    r.report(C.invalidLimit, `${p('requests_per_unit')}: ${requestsPerUnit} is not a whole number ≥ 0`, rpuField.at);
    return undefined;
  }
  return requestsPerUnit;
}

/** `algorithm` (default fixed-window) and `burst` (bucket algorithms only); ok false when either is invalid. */
export function parseAlgorithmAndBurst(
  r: Reader,
  f: Fields,
  p: PathOf,
): { algorithm: AlgorithmName; burst: number | undefined; ok: boolean } {
  let algorithm: AlgorithmName = 'fixed-window';
  let algorithmOk = true;
  const algorithmField = f.get('algorithm');
  if (algorithmField) {
    const raw = r.string(algorithmField, p('algorithm'));
    if (isAlgorithmName(raw)) algorithm = raw;
    else {
      algorithmOk = false;
      if (raw !== undefined) {
        r.report(
          C.unknownAlgorithm,
          `${p('algorithm')}: '${raw}' is not an algorithm; use one of ${ALGORITHMS.join(', ')}`,
          algorithmField.at,
        );
      }
    }
  }
  const burstField = f.get('burst');
  if (!burstField) return { algorithm, burst: undefined, ok: algorithmOk };
  const burst = r.number(burstField, p('burst'));
  if (burst === undefined) return { algorithm, burst, ok: false };
  if (algorithmOk && !isBucketAlgorithm(algorithm)) {
    r.report(
      C.invalidBurst,
      `${p('burst')}: only token-bucket, leaky-bucket and gcra take a burst (this limit is ${algorithm}); add algorithm: token-bucket or remove burst`,
      burstField.at,
    );
    return { algorithm, burst, ok: false };
  }
  return { algorithm, burst, ok: algorithmOk };
}
