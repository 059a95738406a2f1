/**
 * RFC 9457 problem details for the service's own 429s (`POST /json`), naming the violated policies, for clients whose
 * `Accept` asks for `application/problem+json`; every other client keeps the existing body.
 */
import type { OutgoingHttpHeader, ServerResponse } from 'node:http';
import type { Decision } from 'sluice';
import { PROBLEM_TYPE, problemDetails, REJECTION_CODES, retryAfterSeconds } from 'sluice/http';
import type { RateLimitResponse } from 'sluice/rules';

/**
 * The problem body of a rejected rules decision: each over-limit descriptor's binding limit is a violated
 * policy, named as the rule names it (its limit's `name`, else the rule's id).
 */
export function problemOf(response: RateLimitResponse, binding: Decision | undefined): string {
  const results = response.statuses.flatMap((s) =>
    s.code === 'OVER_LIMIT' && s.decision !== undefined
      ? [{ name: s.ruleName ?? s.ruleId ?? 'default', key: '', decision: s.decision }]
      : [],
  );
  const retry = binding === undefined ? undefined : retryAfterSeconds(binding.retryAfterMs);
  const decision = binding === undefined ? undefined : { ...binding, results };
  const problem = problemDetails(
    { kind: 'limited', status: 429, retryAfter: retry ?? null, decision, limitName: results[0]?.name },
    REJECTION_CODES.limited,
    results.length > 0
      ? `over the limit of ${results.map((r) => r.name).join(', ')}`
      : 'the request is over a limit or on the deny list',
  );
  return JSON.stringify(problem);
}

/** Writes a 429 as `application/problem+json` with the decision's rate-limit headers. */
export function sendProblem(res: ServerResponse, text: string, headers: Readonly<Record<string, string>>): void {
  const list: OutgoingHttpHeader[] = [];
  for (const name in headers) {
    if (name !== 'content-type' && name !== 'content-length') list.push(name, headers[name] as string);
  }
  list.push('content-type', PROBLEM_TYPE, 'content-length', Buffer.byteLength(text), 'cache-control', 'no-store');
  res.writeHead(429, list);
  res.end(text);
}
