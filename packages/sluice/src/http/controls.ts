/**
 * What an application can do to a key outside a request (reset it, charge a penalty, block it) on every limit of a
 * middleware, and this process's record of the blocks.
 */
import type { Clock } from '../core/clock.js';
import type { Decision } from '../core/decision.js';
import { type Duration, parseDuration } from '../core/duration.js';
import { SluiceError } from '../core/errors.js';
import type { LimitPlan, LimitSet } from './limits.js';

/**
 * What an application can do to a key from outside a request, on every limit of one middleware: the
 * methods `rateLimit()`'s result carries in every adapter. A key is what the limit counts under: the
 * `key` function's value, or the client address (`'203.0.113.7'`, an IPv6 client as its `/56`).
 * @example
 * const limiter = rateLimit({ limit: 5, period: '15m', key: (req) => req.body.user });
 * app.post('/login', limiter, async (req, res) => {
 *   if (await checkPassword(req.body)) await limiter.resetKey(req.body.user); // a success clears the count
 * });
 */
export interface RateLimitControls {
  /** Forgets the key's counters (and any block) under every limit of the middleware. */
  resetKey(key: string | number): Promise<void>;
  /**
   * Takes `units` more from the key under every limit at once (e.g. a failed captcha costs 5), as
   * much as still fits when not all of it does. @default units 1
   */
  penalty(key: string | number, units?: number): Promise<void>;
  /**
   * Rejects the key for `duration` (ms or `'15m'`): its quota is taken in full in the store (shared by
   * every process, until the quota refills), and this process rejects it for the whole duration.
   */
  block(key: string | number, duration: Duration): Promise<void>;
}

/** Blocks set by `block()` in this process: key → until (ms since the epoch), bounded. */
export class LocalBlocks {
  readonly #until = new Map<string, number>();
  static readonly MAX = 100_000;

  get size(): number {
    return this.#until.size;
  }

  set(key: string, untilMs: number): void {
    if (this.#until.size >= LocalBlocks.MAX) this.prune(0);
    if (this.#until.size >= LocalBlocks.MAX) this.#until.delete(this.#until.keys().next().value as string);
    this.#until.set(key, untilMs);
  }

  delete(key: string): void {
    this.#until.delete(key);
  }

  /** Milliseconds the key stays blocked at `nowMs` (0: not blocked). */
  remaining(key: string, nowMs: number): number {
    const until = this.#until.get(key);
    if (until === undefined) return 0;
    if (until <= nowMs) {
      this.#until.delete(key);
      return 0;
    }
    return until - nowMs;
  }

  prune(nowMs: number): void {
    for (const [key, until] of this.#until) if (until <= nowMs) this.#until.delete(key);
  }
}

/** The decision of a request from a key that `block()` blocked. */
export function blockedDecision(limit: number, remainingMs: number): Decision {
  return { allowed: false, limit, remaining: 0, resetMs: remainingMs, retryAfterMs: remainingMs, reason: 'blocked' };
}

function keyOf(key: unknown, method: string): string {
  if (typeof key === 'string' && key !== '') return key;
  if (typeof key === 'number' && Number.isFinite(key)) return String(key);
  throw new SluiceError('ERR_SLUICE_INVALID_KEY', `${method}: expected a non-empty string or a number as the key`);
}

/** The controls of a middleware over its plan; `rules` middlewares leave counters to the engine. */
export function createControls<Req>(
  plan: LimitPlan<Req>,
  rules: boolean,
  blocks: LocalBlocks,
  clock: Clock,
): RateLimitControls {
  const sets = (method: string): LimitSet<Req>[] => {
    if (rules) {
      throw new SluiceError(
        'ERR_SLUICE_INVALID_OPTION',
        `${method}: this middleware's limits come from rules; reset keys through the rules engine's store`,
      );
    }
    return [...plan.sets()];
  };

  async function penalty(key: string | number, units = 1): Promise<void> {
    const k = keyOf(key, 'penalty');
    if (!(Number.isInteger(units) && units >= 1 && units <= 1e9)) {
      throw new SluiceError('ERR_SLUICE_INVALID_COST', `penalty: ${String(units)} is not a whole number ≥ 1`);
    }
    for (const set of sets('penalty')) {
      const d = await set.limiter.check(k, { cost: units });
      if (d.allowed) continue;
      // Not all of it fits: take what is left under every limit (the least of their remainders).
      const left = Math.min(d.remaining, ...(d.results ?? []).map((r) => r.decision.remaining));
      if (left > 0 && Number.isFinite(left)) await set.limiter.check(k, { cost: left });
    }
  }

  return {
    async resetKey(key) {
      const k = keyOf(key, 'resetKey');
      blocks.delete(k);
      for (const set of sets('resetKey')) await set.limiter.reset(k);
    },
    penalty,
    async block(key, duration) {
      const k = keyOf(key, 'block');
      const ms = parseDuration(duration, 'block');
      if (ms < 1) throw new SluiceError('ERR_SLUICE_INVALID_DURATION', 'block: the duration must be at least 1 ms');
      blocks.set(k, clock.now() + ms);
      const capacity = Math.max(1, ...sets('block').flatMap((s) => s.limiter.limits.map((l) => l.policy.capacity)));
      await penalty(k, capacity);
    },
  };
}
