/**
 * Validation of a rate-limit request before it is decided: its shape, each descriptor, `hitsAddend` and `limit`
 * overrides, with envoy ratelimit's own messages where it has them.
 */
import { SluiceError } from '../core/errors.js';
import { REQUEST_ERROR_CODES as E } from './codes.js';
import type { RateLimitRequest, RequestDescriptor } from './engine-types.js';
import type { Unit } from './types.js';
import { parseUnit } from './units.js';

const MAX_HITS = 1_000_000_000;
const MAX_UINT32 = 4_294_967_295;

/**
 * Checks a request's shape. The first three messages are envoy ratelimit's own, so clients see the same
 * text from either service; the service maps every one of these errors to INVALID_ARGUMENT.
 * @returns the hits each descriptor takes.
 */
export function validateRequest(request: RateLimitRequest): number[] {
  const requestHits = validateShape(request);
  return request.descriptors.map((d, i) => {
    validateDescriptor(d, i);
    return hits(d.hitsAddend, i) ?? requestHits;
  });
}

/**
 * {@link validateRequest} for a request of exactly one descriptor (what Envoy sends most): the same
 * checks and errors, and that descriptor's hits, with no array (this runs for every request).
 */
export function validateSingle(request: RateLimitRequest): number {
  const requestHits = validateShape(request);
  const d = request.descriptors[0] as RequestDescriptor;
  validateDescriptor(d, 0);
  return hits(d.hitsAddend, 0) ?? requestHits;
}

/** Checks the request's own fields; returns the hits of a descriptor that says none. */
function validateShape(request: RateLimitRequest): number {
  if (request === null || typeof request !== 'object') throw invalid('request: expected an object');
  if (typeof request.domain !== 'string') throw invalid('domain: expected a string');
  if (request.domain === '') throw new SluiceError(E.emptyDomain, 'rate limit domain must not be empty');
  if (!Array.isArray(request.descriptors)) throw invalid('descriptors: expected a list');
  if (request.descriptors.length === 0) {
    throw new SluiceError(E.emptyDescriptors, 'rate limit descriptor list must not be empty');
  }
  // Envoy sends 0 when the field is unset: a request always takes at least one hit.
  return Math.max(1, hits(request.hitsAddend, -1) ?? 1);
}

function validateDescriptor(d: RequestDescriptor, i: number): void {
  if (d === null || typeof d !== 'object' || !Array.isArray(d.entries)) {
    throw invalid(`descriptors[${i}].entries: expected a list of { key, value }`);
  }
  // A descriptor with no entries matches no rule: it is answered OK with no limit, as envoy ratelimit does.
  const entries = d.entries;
  for (let j = 0; j < entries.length; j++) {
    const e = entries[j] as (typeof entries)[number];
    if (e === null || typeof e !== 'object' || typeof e.key !== 'string' || typeof e.value !== 'string') {
      throw invalid(`descriptors[${i}].entries[${j}]: expected { key: string, value: string }`);
    }
    if (e.key === '') {
      throw new SluiceError(
        E.emptyKey,
        `rate limit descriptor entry key must not be empty (descriptors[${i}].entries[${j}])`,
      );
    }
  }
  if (d.limit !== undefined) overrideOf(d, i);
}

/** A descriptor's `limit` override, validated. */
export function overrideOf(d: RequestDescriptor, i: number): { requestsPerUnit: number; unit: Unit } | undefined {
  const limit = d.limit;
  if (limit === undefined || limit === null) return undefined;
  const unit = parseUnit(limit.unit);
  const rpu = limit.requestsPerUnit;
  if (unit === undefined) throw invalid(`descriptors[${i}].limit.unit: '${String(limit.unit)}' is not a unit`);
  if (typeof rpu !== 'number' || !Number.isInteger(rpu) || rpu < 0 || rpu > MAX_UINT32) {
    throw invalid(`descriptors[${i}].limit.requestsPerUnit: ${String(rpu)} is not a whole number ≥ 0`);
  }
  return { requestsPerUnit: rpu, unit };
}

/** The hits of the request (`descriptor` -1) or of one descriptor; the field's name is built only for an error. */
function hits(value: unknown, descriptor: number): number | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 0 || value > MAX_HITS) {
    const name = descriptor < 0 ? 'hitsAddend' : `descriptors[${descriptor}].hitsAddend`;
    throw invalid(`${name}: ${String(value)} is not a whole number between 0 and ${MAX_HITS}`);
  }
  return value;
}

function invalid(message: string): SluiceError {
  return new SluiceError(E.invalid, message);
}
