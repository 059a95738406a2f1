/**
 * The Redis store's check of one limit: the local over-limit cache first, then a place in its script's batch; the
 * hot path of every limiter on Redis.
 */
import type { Decision } from '../../core/decision.js';
import { SluiceError } from '../../core/errors.js';
import type { CheckWithFallback } from '../store.js';
import { decodeCompact, undecided } from './decode.js';
import { blockKey, keyIdOf, stateKey, tagOf } from './keys.js';
import type { LocalCache } from './local-cache.js';
import type { Runner } from './runner.js';
import type { ScriptCalls } from './script-calls.js';
import { CHECK_SCRIPTS } from './scripts.js';

/** The fields of the usual check (commit, cost 1), shared: no array and no string per check. */
const USUAL_FIELDS: readonly string[] = ['1', '1'];

/** The store's `check`, counting each decision in `counts`. */
export function createSingleCheck(
  runner: Runner,
  { batcher, queueKey }: Pick<ScriptCalls, 'batcher' | 'queueKey'>,
  prefix: string,
  cache: LocalCache | undefined,
  counts: { decisions: number },
): CheckWithFallback<Promise<Decision>> {
  /** A check; with a `fallback` (a limiter's failure policy), failures resolve with its answer. */
  return (key, policy, cost, nowMs, commit, fallback) => {
    if (runner.closed) {
      if (fallback === undefined) return Promise.reject(closedError());
      return new Promise((resolve) => resolve(fallback(closedError(), key, cost, nowMs, commit)));
    }
    counts.decisions++;
    const tag = tagOf(prefix, key);
    const skey = stateKey(tag, keyIdOf(policy));
    const cached = cache?.get(skey, policy, cost, nowMs);
    if (cached !== undefined) return Promise.resolve(cached);
    return new Promise<Decision>((resolve, reject) => {
      const failed = (error: unknown) => {
        if (fallback === undefined) {
          reject(error);
          return;
        }
        try {
          resolve(fallback(error, key, cost, nowMs, commit));
        } catch (thrown) {
          reject(thrown);
        }
      };
      const script = CHECK_SCRIPTS[policy.algorithm];
      batcher.add({
        script,
        queueKey: queueKey(script, skey, nowMs),
        nowMs,
        items: [
          {
            key: skey,
            // The batch scripts take a block key only for a policy that blocks (script-args.ts).
            bkey: policy.blockMs > 0 ? blockKey(tag, keyIdOf(policy)) : '',
            policy,
            fields: commit && cost === 1 ? USUAL_FIELDS : [commit ? '1' : '0', String(cost)],
          },
        ],
        width: 1,
        settle(r, offset, refused) {
          if (undecided(r, offset, true)) {
            failed(refused());
            return;
          }
          const d = decodeCompact(r, offset, policy, cost, commit);
          cache?.learn(skey, policy, cost, nowMs, commit, d);
          resolve(d);
        },
        fail: failed,
      });
    });
  };
}

/** The error of a call on a closed store. */
export function closedError(): SluiceError {
  return new SluiceError('ERR_SLUICE_STORE_CLOSED', 'the redis store was closed');
}
