/** What the gateway answers itself instead of proxying: refusals (429/403), store failures (503), bad requests, errors. */
import type { Decision } from 'sluice';
import { isSluiceError } from 'sluice';
import type { RateLimitResponse } from 'sluice/rules';
import { isStoreError } from '../../core/decide.js';
import { rejectionBody } from '../../core/rate-limit-headers.js';
import type { Logger } from '../../observability/logger.js';
import { problemOf } from '../http/problem-answer.js';

/** A gateway answer written by the gateway itself: status, its headers, and a JSON error body. */
export interface GatewayAnswer {
  status: number;
  headers: Record<string, string>;
  body: string;
  /** The body is RFC 9457 problem details (`application/problem+json`), not sluice's JSON error body. */
  problem?: true;
}

/** The rules' verdict on a request: let it through, or refuse it (rate limited, or denied), with the headers to add. */
export type Verdict = { verdict: 'pass' | 'limited' | 'denied'; headers: Record<string, string>; binding?: Decision };

/** The verdicts made without a decision, shared (nothing writes to a verdict or its headers). */
export const PASS: Verdict = { verdict: 'pass', headers: {} };
export const DENIED: Verdict = { verdict: 'denied', headers: {} };

/** An answer with sluice's JSON error body. */
export function errorAnswer(
  status: number,
  code: string,
  message: string,
  headers: Record<string, string> = {},
): GatewayAnswer {
  return { status, headers, body: JSON.stringify({ error: { code, message } }) };
}

/** No per-descriptor statuses (several domains decided): the problem names the binding decision's limit only. */
const NO_STATUSES: RateLimitResponse = { overallCode: 'OVER_LIMIT', statuses: [] };

/**
 * What the gateway answers instead of proxying; undefined to proxy. `problem`: the client's `Accept` asks for
 * `application/problem+json` — a 429 is then RFC 9457 problem details naming the violated policies (the
 * over-limit statuses of `response`, when one domain decided); a 403 (deny list) keeps sluice's body.
 */
export function refusal(verdict: Verdict, problem = false, response?: RateLimitResponse): GatewayAnswer | undefined {
  if (verdict.verdict === 'pass') return undefined;
  if (problem && verdict.verdict === 'limited') {
    const body = problemOf(response ?? NO_STATUSES, verdict.binding);
    return { status: 429, headers: verdict.headers, body, problem: true };
  }
  const rejection = rejectionBody(verdict.verdict, verdict.binding);
  return { status: rejection.status, headers: verdict.headers, body: rejection.body };
}

/** The answer to a decision that failed: 503 for the store, 400 for a bad request, else 500 (logged). */
export function failureAnswer(error: unknown, logger: Logger): GatewayAnswer {
  if (isStoreError(error)) {
    const rejection = rejectionBody('unavailable', undefined);
    return { status: rejection.status, headers: { 'retry-after': '1' }, body: rejection.body };
  }
  if (isSluiceError(error) && error.code.startsWith('ERR_SLUICE_REQUEST_')) {
    return errorAnswer(400, error.code, error.message);
  }
  logger.error({ err: error }, 'gateway decision failed');
  return errorAnswer(500, 'ERR_SLUICE_INTERNAL', 'internal error');
}
