/**
 * The keys of a request's limits: the middleware's key (the client's address by default) or each limit's own, resolved
 * with or without promises, a missing key handled as its limit's `missingKey` says.
 */
import type { LimiterKey } from '../limiter/create-limiter.js';
import { keyText } from './keys.js';
import type { LimitSet, SetLimit } from './limits.js';
import type { Awaitable, HttpRequestInfo, RequestFn } from './request.js';
import { warnOnce } from './warn.js';

/** A request's keys: the limiter's key, none (no limit applies), or the limit whose missing key rejects it. */
export type Keys = LimiterKey | undefined | MissingKeyRejection;

/** A request to reject with 400: limit `limitName` found no key and its `missingKey` is `'reject'`. */
export class MissingKeyRejection {
  constructor(readonly limitName: string) {}
}

/**
 * Resolves the keys of a request's limits: the middleware's `key` (default the client's address),
 * each limit's own, numbers as strings; a missing key as the limit's `missingKey` says.
 * @param name - the middleware's name, for the warning of a skipped limit.
 */
export function createKeyResolver<Req>(
  topKey: RequestFn<Req, unknown> | undefined,
  name: string | undefined,
): (set: LimitSet<Req>, req: Req, info: HttpRequestInfo, ipKey: string) => Awaitable<Keys> {
  function keysOf(set: LimitSet<Req>, req: Req, info: HttpRequestInfo, ipKey: string): Awaitable<Keys> {
    const base: Awaitable<unknown> = topKey === undefined ? ipKey : topKey(req, info);
    const values: Awaitable<unknown>[] = [];
    let async = base instanceof Promise;
    for (const limit of set.limits) {
      const k = limit.key;
      const value = k.kind === 'default' ? base : k.kind === 'fn' ? k.fn(req, info) : k.key;
      if (value instanceof Promise) async = true;
      values.push(value);
    }
    const toKeys = (vs: readonly unknown[]) => keysFrom(set, vs, ipKey, info);
    return async ? Promise.all(values).then(toKeys) : toKeys(values);
  }

  /**
   * The key of each limit, numbers as strings; a missing key becomes the client's address, nothing
   * (the limit does not apply) or a 400, as the limit's `missingKey` says.
   */
  function keysFrom(set: LimitSet<Req>, values: readonly unknown[], ipKey: string, info: HttpRequestInfo): Keys {
    if (set.single) {
      const limit = set.limits[0] as SetLimit<Req>;
      const text = keyText(values[0], limit.keyOption);
      if (text !== undefined) return text;
      return missing(limit, ipKey, info);
    }
    const keys: Record<string, string | undefined> = {};
    let any = false;
    for (const [i, limit] of set.limits.entries()) {
      let text = keyText(values[i], limit.keyOption);
      if (text === undefined) {
        const instead = missing(limit, ipKey, info);
        if (instead instanceof MissingKeyRejection) return instead;
        text = instead;
      }
      keys[limit.name] = text;
      if (text !== undefined) any = true;
    }
    return any ? keys : skippedAll(info);
  }

  function missing(
    limit: SetLimit<Req>,
    ipKey: string,
    info: HttpRequestInfo,
  ): string | undefined | MissingKeyRejection {
    switch (limit.missing) {
      case 'ip':
        return ipKey;
      case 'reject':
        return new MissingKeyRejection(limit.name);
      default:
        return skippedAll(info);
    }
  }

  function skippedAll(info: HttpRequestInfo): undefined {
    warnOnce(
      'SLUICE_MISSING_KEY_SKIPPED',
      `sluice: a request to ${info.method} ${info.path} was not counted by a rateLimit() (name: ` +
        `${name ?? 'default'}), because its key was missing and missingKey is 'skip'. If that is not meant, ` +
        `use missingKey: 'ip' (count it under the client's address) or 'reject' (answer 400).`,
    );
    return undefined;
  }

  return keysOf;
}
