/**
 * Envoy RLS v3 messages <-> the rules engine's request and response. gRPC messages arrive from
 * proto-loader with camelCase fields; `POST /json` bodies may use either the proto field names
 * (`hits_addend`) or their JSON names (`hitsAddend`), as protojson accepts both.
 */
import { SluiceError } from 'sluice';
import type { LimitOverride, RateLimitRequest, RequestDescriptor, Unit } from 'sluice/rules';
import type { Decided } from '../core/decide.js';
import { structMessage } from './struct-wire.js';
import type { WireRequest } from './wire.js';

/** Most descriptors in one request, and most entries in one descriptor. */
export const MAX_DESCRIPTORS = 1000;
export const MAX_ENTRIES = 100;
/**
 * Longest domain and descriptor key, and longest descriptor value (UTF-16 code units), on every surface
 * that takes them (gRPC, `POST /json`, the gateway's header- and path-made descriptors): what a client
 * sends becomes a store key and a dashboard entry, so its size is bounded where it enters.
 */
export const MAX_DOMAIN_LENGTH = 256;
export const MAX_DESCRIPTOR_KEY_LENGTH = 256;
export const MAX_DESCRIPTOR_VALUE_LENGTH = 1024;
/** The code of a request whose domain, key or value is longer than allowed (INVALID_ARGUMENT / 400). */
export const VALUE_TOO_LONG = 'ERR_SLUICE_REQUEST_VALUE_TOO_LONG';
const UINT32_MAX = 4294967295;

/** Envoy's unit enum, by number (`envoy.type.v3.RateLimitUnit`). */
const UNIT_BY_NUMBER: readonly (Unit | undefined)[] = [
  undefined,
  'SECOND',
  'MINUTE',
  'HOUR',
  'DAY',
  'MONTH',
  'YEAR',
  'WEEK',
];
const UNITS = new Set(UNIT_BY_NUMBER.filter((u) => u !== undefined));

function invalid(code: `ERR_SLUICE_${string}`, message: string): SluiceError {
  return new SluiceError(code, message);
}

/** Reads `name` or its snake_case form from a message. */
function get(message: Record<string, unknown>, camel: string, snake: string): unknown {
  const v = message[camel];
  return v === undefined || v === null ? message[snake] : v;
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function uint(value: unknown, field: string, max: number): number {
  const n = typeof value === 'string' && /^\d{1,16}$/.test(value) ? Number(value) : value;
  if (typeof n !== 'number' || !Number.isSafeInteger(n) || n < 0 || n > max) {
    throw invalid('ERR_SLUICE_REQUEST_INVALID', `${field}: expected a whole number between 0 and ${max}`);
  }
  return n;
}

function str(value: unknown, field: string, max: number): string {
  if (value === undefined || value === null) return '';
  if (typeof value !== 'string') throw invalid('ERR_SLUICE_REQUEST_INVALID', `${field}: expected a string`);
  if (value.length > max) throw tooLong(field, value.length, max);
  return value;
}

function tooLong(field: string, length: number, max: number): SluiceError {
  return invalid(VALUE_TOO_LONG, `${field}: at most ${max} characters, got ${length}`);
}

/**
 * Checks the lengths of a request built elsewhere (the gateway's descriptors come from request headers
 * and paths). @throws SluiceError `ERR_SLUICE_REQUEST_VALUE_TOO_LONG`
 */
export function assertRequestLengths(request: RateLimitRequest): void {
  if (request.domain.length > MAX_DOMAIN_LENGTH) throw tooLong('domain', request.domain.length, MAX_DOMAIN_LENGTH);
  const descriptors = request.descriptors;
  for (let i = 0; i < descriptors.length; i++) {
    const entries = (descriptors[i] as (typeof descriptors)[number]).entries;
    for (let j = 0; j < entries.length; j++) {
      const e = entries[j] as (typeof entries)[number];
      // The field's name is built only for an error: this runs for every gateway request.
      if (e.key.length > MAX_DESCRIPTOR_KEY_LENGTH) {
        throw tooLong(`descriptors[${i}].entries[${j}].key`, e.key.length, MAX_DESCRIPTOR_KEY_LENGTH);
      }
      if (e.value.length > MAX_DESCRIPTOR_VALUE_LENGTH) {
        throw tooLong(`descriptors[${i}].entries[${j}].value (${e.key})`, e.value.length, MAX_DESCRIPTOR_VALUE_LENGTH);
      }
    }
  }
}

/**
 * Turns an RLS `RateLimitRequest` message into the engine's request, checking every field's type.
 * Empty domains and descriptor lists get envoy ratelimit's own messages.
 * @throws SluiceError `ERR_SLUICE_REQUEST_*` (map to INVALID_ARGUMENT / 400).
 */
export function requestFromMessage(message: unknown): RateLimitRequest {
  if (!isRecord(message)) throw invalid('ERR_SLUICE_REQUEST_INVALID', 'request: expected a JSON object');
  const domain = str(message.domain, 'domain', MAX_DOMAIN_LENGTH);
  if (domain === '') throw invalid('ERR_SLUICE_REQUEST_EMPTY_DOMAIN', 'rate limit domain must not be empty');
  const list = message.descriptors ?? [];
  if (!Array.isArray(list)) throw invalid('ERR_SLUICE_REQUEST_INVALID', 'descriptors: expected a list');
  if (list.length === 0) {
    throw invalid('ERR_SLUICE_REQUEST_EMPTY_DESCRIPTORS', 'rate limit descriptor list must not be empty');
  }
  if (list.length > MAX_DESCRIPTORS) {
    throw invalid(
      'ERR_SLUICE_TOO_MANY_ITEMS',
      `descriptors: at most ${MAX_DESCRIPTORS} per request, got ${list.length}`,
    );
  }
  const descriptors = list.map(descriptorFrom);
  const request: RateLimitRequest = { domain, descriptors };
  const hits = get(message, 'hitsAddend', 'hits_addend');
  if (hits !== undefined && hits !== null) request.hitsAddend = uint(hits, 'hits_addend', UINT32_MAX);
  return request;
}

/** A descriptor from its message; error paths are built only when there is an error (this runs per request). */
function descriptorFrom(value: unknown, i: number): RequestDescriptor {
  const path = () => `descriptors[${i}]`;
  if (!isRecord(value)) throw invalid('ERR_SLUICE_REQUEST_INVALID', `${path()}: expected an object`);
  const list = value.entries ?? [];
  if (!Array.isArray(list)) throw invalid('ERR_SLUICE_REQUEST_INVALID', `${path()}.entries: expected a list`);
  if (list.length > MAX_ENTRIES) {
    throw invalid('ERR_SLUICE_TOO_MANY_ITEMS', `${path()}.entries: at most ${MAX_ENTRIES} entries, got ${list.length}`);
  }
  const entries = list.map((e, j) => {
    if (!isRecord(e)) throw invalid('ERR_SLUICE_REQUEST_INVALID', `${path()}.entries[${j}]: expected an object`);
    const { key, value } = e;
    return {
      key:
        typeof key === 'string' && key.length <= MAX_DESCRIPTOR_KEY_LENGTH
          ? key
          : str(key, `${path()}.entries[${j}].key`, MAX_DESCRIPTOR_KEY_LENGTH),
      value:
        typeof value === 'string' && value.length <= MAX_DESCRIPTOR_VALUE_LENGTH
          ? value
          : str(value, `${path()}.entries[${j}].value`, MAX_DESCRIPTOR_VALUE_LENGTH),
    };
  });
  const descriptor: RequestDescriptor = { entries };
  const limit = value.limit;
  if (limit !== undefined && limit !== null) descriptor.limit = overrideFrom(limit, `${path()}.limit`);
  const hits = get(value, 'hitsAddend', 'hits_addend');
  if (hits !== undefined && hits !== null) {
    // google.protobuf.UInt64Value: `{value: n}` from gRPC, a bare number (or string) in protojson.
    const raw = isRecord(hits) ? (hits.value ?? 0) : hits;
    descriptor.hitsAddend = uint(raw, `${path()}.hits_addend`, Number.MAX_SAFE_INTEGER);
  }
  return descriptor;
}

/**
 * {@link requestFromMessage} for a message from the service's own protobuf decoder (`wire.ts`), which
 * built every object and typed every field: when only the bounds remain to check and they hold, the
 * decoded message is the request as it is, with no copy. Anything else (a `limit` override, a
 * per-descriptor `hits_addend`, a bound broken) goes through {@link requestFromMessage}, so the answer
 * and every error are the same.
 */
export function requestFromWire(message: WireRequest): RateLimitRequest {
  const { domain, descriptors } = message;
  if (domain === '' || domain.length > MAX_DOMAIN_LENGTH) return requestFromMessage(message);
  if (descriptors.length === 0 || descriptors.length > MAX_DESCRIPTORS) return requestFromMessage(message);
  for (const d of descriptors) {
    if (d.limit !== undefined || d.hitsAddend !== undefined || d.entries.length > MAX_ENTRIES) {
      return requestFromMessage(message);
    }
    for (const e of d.entries) {
      if (e.key.length > MAX_DESCRIPTOR_KEY_LENGTH || e.value.length > MAX_DESCRIPTOR_VALUE_LENGTH) {
        return requestFromMessage(message);
      }
    }
  }
  // Sound: no descriptor has `limit` or `hitsAddend`, the two fields whose wire form differs.
  return message as unknown as RateLimitRequest;
}

function overrideFrom(value: unknown, path: string): LimitOverride {
  if (!isRecord(value)) throw invalid('ERR_SLUICE_REQUEST_INVALID', `${path}: expected an object`);
  const requestsPerUnit = uint(
    get(value, 'requestsPerUnit', 'requests_per_unit') ?? 0,
    `${path}.requests_per_unit`,
    UINT32_MAX,
  );
  const rawUnit = value.unit;
  const unit =
    typeof rawUnit === 'number'
      ? UNIT_BY_NUMBER[rawUnit]
      : typeof rawUnit === 'string'
        ? rawUnit.toUpperCase()
        : undefined;
  if (unit === undefined || !UNITS.has(unit as Unit)) {
    throw invalid(
      'ERR_SLUICE_REQUEST_INVALID',
      `${path}.unit: expected one of SECOND, MINUTE, HOUR, DAY, WEEK, MONTH, YEAR, got ${JSON.stringify(rawUnit ?? null)}`,
    );
  }
  return { requestsPerUnit, unit: unit as Unit };
}

/** A `RateLimitResponse` message for grpc-js (camelCase fields, Duration as seconds + nanos). */
export function responseToMessage(decided: Decided): Record<string, unknown> {
  return {
    overallCode: decided.overallCode,
    statuses: decided.statuses.map((s) => {
      const limit = s.currentLimit;
      if (limit === undefined) return { code: s.code, limitRemaining: clamp(s.limitRemaining) };
      const ms = Math.max(0, Math.ceil(s.durationUntilResetMs));
      return {
        code: s.code,
        currentLimit: { name: limit.name ?? '', requestsPerUnit: clamp(limit.requestsPerUnit), unit: limit.unit },
        limitRemaining: clamp(s.limitRemaining),
        durationUntilReset: { seconds: Math.floor(ms / 1000), nanos: (ms % 1000) * 1_000_000 },
      };
    }),
    responseHeadersToAdd: headerList(decided.headers),
    ...(decided.dynamicMetadata === undefined ? {} : { dynamicMetadata: structMessage(decided.dynamicMetadata) }),
  };
}

/** The same response in protojson form (enum names, camelCase, Duration as `"1.500s"`), for `POST /json`. */
export function responseToJson(decided: Decided): Record<string, unknown> {
  return {
    overallCode: decided.overallCode,
    statuses: decided.statuses.map((s) => {
      const limit = s.currentLimit;
      if (limit === undefined) return { code: s.code, limitRemaining: clamp(s.limitRemaining) };
      const current: Record<string, unknown> = { requestsPerUnit: clamp(limit.requestsPerUnit), unit: limit.unit };
      if (limit.name !== undefined) current.name = limit.name;
      return {
        code: s.code,
        currentLimit: current,
        limitRemaining: clamp(s.limitRemaining),
        durationUntilReset: durationJson(s.durationUntilResetMs),
      };
    }),
    responseHeadersToAdd: headerList(decided.headers),
    // protojson writes a Struct as the plain JSON object it holds.
    ...(decided.dynamicMetadata === undefined ? {} : { dynamicMetadata: decided.dynamicMetadata }),
  };
}

function headerList(headers: Record<string, string>): { key: string; value: string }[] {
  return Object.entries(headers).map(([key, value]) => ({ key, value }));
}

function clamp(n: number): number {
  return Number.isFinite(n) ? Math.min(UINT32_MAX, Math.max(0, Math.floor(n))) : UINT32_MAX;
}

/** A duration in protojson's form: whole seconds and up to millisecond decimals, e.g. `"59s"`, `"0.250s"`. */
export function durationJson(ms: number): string {
  const whole = Math.max(0, Math.ceil(ms));
  const seconds = Math.floor(whole / 1000);
  const rest = whole % 1000;
  return rest === 0 ? `${seconds}s` : `${seconds}.${String(rest).padStart(3, '0')}s`;
}
