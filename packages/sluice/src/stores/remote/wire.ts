/**
 * The JSON of `POST /v1/check` as the remote store speaks it (docs/service.md has the whole format):
 * one item per store operation, results in request order. Plain data in, plain data out: no I/O here.
 */
import type { Decision, RejectReason } from '../../core/decision.js';
import { SluiceError } from '../../core/errors.js';
import { isBucketAlgorithm, type ResolvedPolicy, resolvePolicy } from '../../core/policy.js';
import type { Lease, LeaseDecision } from '../store.js';
import { checkResult } from './check-result.js';

/** The operations of a `/v1/check` item; `check` when absent. */
export type WireOp = 'check' | 'peek' | 'refund' | 'reset' | 'acquire' | 'release' | 'charge';

/** One item of a `/v1/check` request. */
export interface WireItem {
  key: string;
  op?: WireOp;
  algorithm?: string;
  limit?: number;
  period?: number;
  burst?: number;
  blockDuration?: number;
  /** Keeps this caller's counters apart from other callers with the same policy. */
  name?: string;
  cost?: number;
  /** Items of one request with the same group are decided together, all or nothing. */
  group?: number;
  /** The caller's clock (only when the service runs with `--client-clock`). */
  nowMs?: number;
  leaseMs?: number;
  lease?: string;
}

/** One result of a `/v1/check` response. */
export interface WireResult {
  allowed?: boolean;
  limit?: number;
  remaining?: number;
  resetMs?: number;
  retryAfterMs?: number | null;
  delayMs?: number;
  reason?: string;
  degraded?: boolean;
  lease?: { id: string; expiresAt: number };
  released?: boolean;
  ok?: boolean;
  error?: { code?: string; message?: string };
}

type PolicyPart = Pick<WireItem, 'algorithm' | 'limit' | 'period' | 'burst' | 'blockDuration' | 'name'>;
const parts = new WeakMap<ResolvedPolicy, PolicyPart>();

/**
 * The policy fields of an item, computed once per policy. A limiter scopes its policy ids by limit and
 * limiter name (`api~per-ip~fw10/1000`); the service builds the same canonical id from the fields, so
 * only the scope travels, as `name`. Callers in other languages that send the bare policy share counters
 * with a sluice limiter that has no name, as they would on one Redis.
 */
export function policyPart(policy: ResolvedPolicy): PolicyPart {
  let part = parts.get(policy);
  if (part !== undefined) return part;
  part = { algorithm: policy.algorithm, limit: policy.limit, period: policy.periodMs };
  if (isBucketAlgorithm(policy.algorithm) && policy.burst !== policy.limit) part.burst = policy.burst;
  if (policy.blockMs > 0) part.blockDuration = policy.blockMs;
  const canonical = resolvePolicy({
    algorithm: policy.algorithm,
    limit: policy.limit,
    period: policy.periodMs,
    ...(part.burst === undefined ? {} : { burst: part.burst }),
  }).id;
  if (policy.id !== canonical) {
    part.name = policy.id.endsWith(`~${canonical}`) ? policy.id.slice(0, -canonical.length - 1) : policy.id;
  }
  parts.set(policy, part);
  return part;
}

const REASONS: ReadonlySet<string> = new Set(['cost-exceeds-capacity', 'blocked', 'denied', 'store-unavailable']);

/** A decision out of a result ({@link checkResults} validated it); throws the result's error (see {@link resultError}). */
export function toDecision(r: WireResult): Decision {
  if (r.error !== undefined || typeof r.allowed !== 'boolean') throw resultError(r);
  const d: Decision = {
    allowed: r.allowed,
    limit: r.limit as number,
    remaining: r.remaining as number,
    resetMs: r.resetMs as number,
    retryAfterMs: r.retryAfterMs === null ? Number.POSITIVE_INFINITY : (r.retryAfterMs as number),
  };
  if (r.delayMs !== undefined) d.delayMs = r.delayMs;
  // A reason a newer service added is left out: the decision itself stands.
  if (r.reason !== undefined && REASONS.has(r.reason)) d.reason = r.reason as RejectReason;
  if (r.degraded === true) d.degraded = true;
  return d;
}

/**
 * The `results` of an answer to `count` operations, each validated by {@link checkResult}: one per
 * operation, or the whole answer is a store failure. A limit of `'lots'`, a `NaN` or an `Infinity`
 * never becomes a decision.
 */
export function checkResults(results: unknown, count: number): WireResult[] {
  if (!Array.isArray(results) || results.length !== count) {
    throw new SluiceError(
      'ERR_SLUICE_STORE_UNAVAILABLE',
      `the sluice service answered ${Array.isArray(results) ? `${results.length} results` : 'without results'} to ${count} operations; expected one result per operation`,
    );
  }
  for (let i = 0; i < count; i++) {
    const problem = checkResult(results[i]);
    if (problem !== undefined) {
      throw new SluiceError(
        'ERR_SLUICE_STORE_UNAVAILABLE',
        `the sluice service sent a result that is not the protocol's: results[${i}]${problem}`,
      );
    }
  }
  return results as WireResult[];
}

/** A lease decision out of an `acquire` result. */
export function toLeaseDecision(r: WireResult, key: string): LeaseDecision {
  const d: LeaseDecision = toDecision(r);
  if (d.allowed && r.lease !== undefined) d.lease = { key, id: r.lease.id, expiresAt: r.lease.expiresAt };
  return d;
}

/** The item that releases `lease`. */
export function releaseItem(lease: Lease): WireItem {
  return { op: 'release', key: lease.key, lease: lease.id };
}

/**
 * The error a failed result stands for. The service's store failing is a store failure (the limiter's
 * `fail` policy answers); anything else is misuse, reported with the service's code and message.
 */
export function resultError(r: WireResult): SluiceError {
  const code = r.error?.code ?? 'ERR_SLUICE_STORE_UNAVAILABLE';
  const message = r.error?.message ?? 'the service sent a result without a decision';
  if (
    code === 'ERR_SLUICE_STORE_UNAVAILABLE' ||
    code === 'ERR_SLUICE_STORE_TIMEOUT' ||
    code === 'ERR_SLUICE_INTERNAL'
  ) {
    return new SluiceError('ERR_SLUICE_STORE_UNAVAILABLE', `the sluice service could not decide: ${message}`);
  }
  if (
    (code === 'ERR_SLUICE_UNKNOWN_OPTION' && /\b(op|group|name|nowMs|lease|leaseMs)\b/.test(message)) ||
    // A service from before an op (`charge`) names the ops it knows.
    (code === 'ERR_SLUICE_INVALID_REQUEST' && /\bop: expected one of\b/.test(message))
  ) {
    return new SluiceError(
      'ERR_SLUICE_SERVICE_TOO_OLD',
      `the sluice service does not know this /v1/check field (${message}); upgrade sluice-server`,
    );
  }
  return new SluiceError(code as `ERR_SLUICE_${string}`, message);
}
