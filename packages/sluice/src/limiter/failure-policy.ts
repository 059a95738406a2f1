/**
 * What a limiter answers when its store fails: allow (`open`), reject (`closed`), or count in an in-process memory
 * store at a share of the limit (`insurance`), each such decision marked degraded.
 */
import type { Decision } from '../core/decision.js';
import { optionError, SluiceError } from '../core/errors.js';
import type { FailMode } from '../core/fail-mode.js';
import { isBucketAlgorithm, type ResolvedPolicy, resolvePolicy } from '../core/policy.js';
import { createMemoryStore, type MemoryStore } from '../stores/memory/memory-store.js';
import type { StoreItem } from '../stores/store.js';

export type { FailMode } from '../core/fail-mode.js';

/** The failure options a limiter takes. */
export interface FailureOptions {
  /** What to do when the store fails. @default 'open' */
  fail?: FailMode;
  /**
   * With `fail: 'insurance'`, the fraction of each limit (and burst) the in-memory stand-in allows,
   * e.g. `0.25` when four processes share the limit. @default 1
   */
  insuranceShare?: number;
}

/** A limiter's failure policy, resolved from its options. */
export interface FailurePolicy {
  readonly mode: FailMode;
  /** Decisions for the items of one request, taken without the store. */
  decide(items: readonly StoreItem[], nowMs: number, commit: boolean): Decision[];
  /** Refunds the stand-in (insurance) when the store could not take a refund. */
  refund(item: StoreItem, nowMs: number): void;
  /** Forgets a key in the stand-in (insurance). */
  reset(key: string, policy: ResolvedPolicy): void;
}

const MODES: readonly FailMode[] = ['open', 'closed', 'insurance'];

/** How long a fail-closed rejection tells the caller to wait, at most. */
const CLOSED_RETRY_MS = 1000;

/** True for the errors a failure policy answers: the store failed, as opposed to being misused. */
export function isStoreFailure(error: unknown): boolean {
  return (
    !(error instanceof SluiceError) ||
    error.code === 'ERR_SLUICE_STORE_UNAVAILABLE' ||
    error.code === 'ERR_SLUICE_STORE_TIMEOUT'
  );
}

/** Validates `fail` and `insuranceShare` into a FailurePolicy. */
export function createFailurePolicy(options: FailureOptions): FailurePolicy {
  const mode = options.fail ?? 'open';
  if (!MODES.includes(mode)) {
    throw optionError('fail', `expected 'open', 'closed' or 'insurance', got ${String(mode)}`);
  }
  const share = options.insuranceShare;
  if (share !== undefined && mode !== 'insurance') {
    throw optionError('insuranceShare', "only applies with fail: 'insurance'");
  }
  if (share !== undefined && !(typeof share === 'number' && share > 0 && share <= 1)) {
    throw optionError('insuranceShare', `expected a number in (0, 1], got ${String(share)}`);
  }
  if (mode === 'insurance') return createInsurance(share ?? 1);
  const decide = mode === 'open' ? openDecision : closedDecision;
  return {
    mode,
    decide: (items) => items.map((item) => decide(item.policy.limit, item.policy.periodMs)),
    refund: noop,
    reset: noop,
  };
}

function noop(): void {}

/** The failure policy's allowance when the store fails open: the whole limit, marked degraded. */
export function openDecision(limit: number): Decision {
  return { allowed: true, limit, remaining: limit, resetMs: 0, retryAfterMs: 0, degraded: true };
}

/** The failure policy's rejection when the store fails closed: retry in a second, or a period when it is shorter. */
export function closedDecision(limit: number, periodMs: number): Decision {
  const wait = Math.min(CLOSED_RETRY_MS, periodMs);
  return {
    allowed: false,
    limit,
    remaining: 0,
    resetMs: wait,
    retryAfterMs: wait,
    reason: 'store-unavailable',
    degraded: true,
  };
}

/** An insurance share of a limit or burst: never below 1 unless it was 0. */
export function shareOf(n: number, share: number): number {
  return n === 0 ? 0 : Math.max(1, Math.floor(n * share));
}

function createInsurance(share: number): FailurePolicy {
  let memory: MemoryStore | undefined;
  const scaled = new Map<ResolvedPolicy, ResolvedPolicy>();
  const store = () => {
    // Created on the first failure: a limiter whose store never fails holds no second store.
    memory ??= createMemoryStore({ maxKeys: 100_000 });
    return memory;
  };
  const scale = (p: ResolvedPolicy): ResolvedPolicy => {
    let s = scaled.get(p);
    if (s === undefined) {
      s = share === 1 ? p : scalePolicy(p, share);
      scaled.set(p, s);
    }
    return s;
  };
  const toMemory = (item: StoreItem): StoreItem => ({ key: item.key, policy: scale(item.policy), cost: item.cost });
  return {
    mode: 'insurance',
    decide(items, nowMs, commit) {
      return store()
        .checkMany(items.map(toMemory), nowMs, commit)
        .map((d) => ({ ...d, degraded: true }));
    },
    refund(item, nowMs) {
      const m = toMemory(item);
      store().refund(m.key, m.policy, m.cost, nowMs, item.takenAtMs);
    },
    reset(key, policy) {
      memory?.reset(key, scale(policy));
    },
  };
}

/** The policy with its limit (and burst) scaled by `share`, never below 1 unless it was 0. */
export function scalePolicy(p: ResolvedPolicy, share: number): ResolvedPolicy {
  const resolved = resolvePolicy({
    algorithm: p.algorithm,
    limit: shareOf(p.limit, share),
    period: p.periodMs,
    ...(isBucketAlgorithm(p.algorithm) ? { burst: shareOf(p.burst, share) } : {}),
    blockDuration: p.blockMs,
  });
  return { ...resolved, id: p.id };
}

/**
 * Degraded decisions for one request whose items belong to several limiters (checkAll), each with
 * its own policy, still all or nothing: the stand-ins take units only when every item allows.
 */
export function decideDegraded(
  parts: readonly { policy: FailurePolicy; items: readonly StoreItem[] }[],
  nowMs: number,
  commit: boolean,
): Decision[][] {
  const looks = parts.map((part) => part.policy.decide(part.items, nowMs, false));
  if (!commit || !looks.every((ds) => ds.every((d) => d.allowed))) return looks;
  const taken: Decision[][] = [];
  for (const part of parts) {
    const ds = part.policy.decide(part.items, nowMs, true);
    if (!ds.every((d) => d.allowed)) {
      // Only when one key appears under two limiters and the second does not fit: undo the others.
      for (let i = 0; i < taken.length; i++) {
        const done = parts[i] as (typeof parts)[number];
        for (const item of done.items) done.policy.refund(item, nowMs);
      }
      return looks;
    }
    taken.push(ds);
  }
  return taken;
}
