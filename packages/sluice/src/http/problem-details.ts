/**
 * RFC 9457 problem details for rejections: the body a client that asks for `application/problem+json` gets, naming
 * the policies it broke (the `violated-policies` member of the IETF RateLimit header fields draft).
 */
import type { Decision } from '../core/decision.js';
import type { LimiterDecision } from '../limiter/create-limiter.js';

/**
 * What a problem body is made of: the fields of `RejectionInfo` (rejection.ts, which renders with this
 * file, so it cannot be imported here without a cycle).
 */
export interface ProblemSource {
  readonly kind: string;
  readonly status: number;
  readonly retryAfter: number | null;
  readonly decision: Decision | undefined;
  readonly limitName: string | undefined;
}

/** The media type of a problem details body (RFC 9457 §3). */
export const PROBLEM_TYPE = 'application/problem+json';

/**
 * The problem type of each rejection. A 429 uses the type the RateLimit header fields draft registers
 * (`quota-exceeded`); the others have none of their own, so `about:blank` (RFC 9457 §4.2.1) says the
 * status is the whole story.
 */
const QUOTA_EXCEEDED = 'https://iana.org/assignments/http-problem-types#quota-exceeded';

/** The title of each status (about:blank's title is the status phrase, RFC 9457 §4.2.1). */
const TITLES: Readonly<Record<number, string>> = {
  400: 'Bad Request',
  403: 'Forbidden',
  429: 'Too Many Requests',
  503: 'Service Unavailable',
};

/** One policy the request broke, as the problem body names it. */
export interface ViolatedPolicy {
  /** The limit's name (what `RateLimit-Policy` calls it). */
  name: string;
  limit: number;
  remaining: number;
  /** Seconds until this policy is back to full capacity. */
  reset: number;
}

/** An RFC 9457 problem details object for a rejection. */
export interface ProblemDetails {
  type: string;
  title: string;
  status: number;
  detail: string;
  /** The same code the default JSON body carries in `error.code`. */
  code: string;
  /** Seconds until a retry can pass; null when it never can (or for a deny). */
  retry_after: number | null;
  /** The names of the policies the request broke (429 only). */
  'violated-policies'?: string[];
  /** Each broken policy's state (429 only). */
  policies?: ViolatedPolicy[];
}

/**
 * True when the `Accept` header asks for `application/problem+json` (with a quality above 0). A client
 * that sends only `application/json` or nothing keeps the default body: the existing contract.
 */
export function acceptsProblem(accept: string | undefined): boolean {
  if (accept === undefined || !accept.includes('problem+json')) return false;
  for (const range of accept.split(',')) {
    const [type, ...params] = range.split(';');
    if (type?.trim().toLowerCase() !== PROBLEM_TYPE) continue;
    const q = params.find((p) => p.trim().toLowerCase().startsWith('q='));
    return q === undefined || Number(q.trim().slice(2)) > 0;
  }
  return false;
}

/** The policies behind a 429: every limit of a multi-limit decision that rejected, else the one named. */
export function violatedPolicies(info: ProblemSource): ViolatedPolicy[] {
  const decision = info.decision as LimiterDecision | undefined;
  if (info.kind !== 'limited' || decision === undefined) return [];
  const own = (decision.results ?? []).filter((r) => !r.decision.allowed);
  if (own.length > 0) return own.map((r) => policyOf(r.name, r.decision));
  return [policyOf(info.limitName ?? 'default', decision)];
}

function policyOf(name: string, d: LimiterDecision): ViolatedPolicy {
  return { name, limit: d.limit, remaining: d.remaining, reset: Math.ceil(d.resetMs / 1000) };
}

/**
 * The problem details body of a rejection, with `detail` as its message and `code` as the default JSON
 * body's `error.code`.
 */
export function problemDetails(info: ProblemSource, code: string, detail: string): ProblemDetails {
  const limited = info.kind === 'limited';
  const problem: ProblemDetails = {
    type: limited ? QUOTA_EXCEEDED : 'about:blank',
    // A 429 under its own type has a title of its own; a custom limited status keeps it too.
    title: limited ? 'Request above quota' : (TITLES[info.status] ?? 'Request rejected'),
    status: info.status,
    detail,
    code,
    retry_after: info.retryAfter,
  };
  const policies = violatedPolicies(info);
  if (policies.length > 0) {
    problem['violated-policies'] = policies.map((p) => p.name);
    problem.policies = policies;
  }
  return problem;
}
