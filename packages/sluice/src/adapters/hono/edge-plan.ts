/**
 * The limits of the edge build of `sluice/hono` as they apply to one request: each limit's key (the middleware's, its
 * own, or the client's address for a missing one, as `missingKey` says) and its policy (made once per value of a limit
 * that is a function of the request).
 */
import type { Context } from 'hono';
import type { ResolvedPolicy } from '../../core/policy.js';
import { keyText } from '../../http/keys.js';
import { type RejectionInfo, rejectionInfo } from '../../http/rejection.js';
import type { HttpRequestInfo, RequestFn } from '../../http/request.js';
import { warnOnce } from '../../http/warn.js';
import type { EdgeLimit, EdgePolicy } from './edge-limits.js';

/** A limit as it applies to one request: its policy and the key it counts under. */
export interface Applied extends EdgePolicy {
  readonly name: string;
  readonly key: string;
}

/** Most policies kept of limits that are functions of the request (each distinct value makes one). */
const MAX_MADE = 1000;

/** The plan of `limits` under the middleware's `key` (undefined: the client's address). */
export function createEdgePlan(
  limits: readonly EdgeLimit[],
  topKey: RequestFn<Context, unknown> | undefined,
  name: string | undefined,
) {
  const made = new Map<string, EdgePolicy>();

  async function policyOf(limit: EdgeLimit, c: Context, info: HttpRequestInfo): Promise<EdgePolicy> {
    if (limit.fixed !== undefined) return limit.fixed;
    const value = await (limit.limitFn as NonNullable<EdgeLimit['limitFn']>)(c, info);
    const id = `${limit.name}\n${value}`;
    let p = made.get(id);
    if (p === undefined) {
      p = limit.policyFor(value);
      if (made.size >= MAX_MADE) made.clear();
      made.set(id, p);
    }
    return p;
  }

  return {
    /** The limits that apply to this request with their keys; the rejection of a missing key under `'reject'`. */
    async applied(c: Context, info: HttpRequestInfo): Promise<Applied[] | RejectionInfo> {
      const base = topKey === undefined ? info.ipKey : await topKey(c, info);
      const out: Applied[] = [];
      for (const limit of limits) {
        let key = keyText(limit.keyFn === undefined ? base : await limit.keyFn(c, info), limit.keyOption);
        if (key === undefined && limit.missing === 'reject')
          return rejectionInfo('missing-key', undefined, limit.name, 400);
        if (key === undefined && limit.missing === 'ip') key = info.ipKey;
        if (key !== undefined) out.push({ name: limit.name, key, ...(await policyOf(limit, c, info)) });
      }
      if (out.length === 0)
        warnOnce(
          'SLUICE_MISSING_KEY_SKIPPED',
          `sluice: ${info.method} ${info.path} was not counted by rateLimit() '${name ?? 'default'}' (its key was missing and missingKey is 'skip'); if not meant, use missingKey: 'ip' or 'reject'`,
        );
      return out;
    },
    /** Every policy a key may be counted under now: the fixed ones and those made so far. */
    policies(): ResolvedPolicy[] {
      return [
        ...limits.flatMap((l) => (l.fixed === undefined ? [] : [l.fixed.policy])),
        ...[...made.values()].map((p) => p.policy),
      ];
    },
  };
}
