/**
 * What a limiter answers when its store fails: allow (`open`), reject (`closed`), or count in an in-process memory
 * store at a share of the limit (`insurance`), each such decision marked degraded.
 */
import type { Decision } from '../core/decision.js';
import { isSluiceError, SluiceError } from '../core/errors.js';
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
  if (!(error instanceof SluiceError)) return true;
  return isSluiceError(error, 'ERR_SLUICE_STORE_UNAVAILABLE') || isSluiceError(error, 'ERR_SLUICE_STORE_TIMEOUT');
}

/** Validates `fail` and `insuranceShare` into a FailurePolicy. */
export function createFailurePolicy(options: FailureOptions): FailurePolicy {
  const mode = options.fail ?? 'open';
  if (!MODES.includes(mode)) {
    throw new SluiceError(
      'ERR_SLUICE_INVALID_OPTION',
      `fail: expected 'open', 'closed' or 'insurance', got ${String(mode)}`,
      {
        option: 'fail',
      },
    );
  }
  const share = options.insuranceShare;
  if (share !== undefined) {
    if (mode !== 'insurance') {
      throw new SluiceError('ERR_SLUICE_INVALID_OPTION', "insuranceShare: only applies with fail: 'insurance'", {
        option: 'insuranceShare',
      });
    }
    if (typeof share !== 'number' || !(share > 0 && share <= 1)) {
      throw new SluiceError(
        'ERR_SLUICE_INVALID_OPTION',
        `insuranceShare: expected a number in (0, 1], got ${String(share)}`,
        {
          option: 'insuranceShare',
        },
      );
    }
  }
  if (mode === 'open') return { mode, decide: (items) => items.map(openDecision), refund: noop, reset: noop };
  if (mode === 'closed') return { mode, decide: (items) => items.map(closedDecision), refund: noop, reset: noop };
  return createInsurance(share ?? 1);
}

function noop(): void {}

function openDecision(item: StoreItem): Decision {
  const { limit } = item.policy;
  return { allowed: true, limit, remaining: limit, resetMs: 0, retryAfterMs: 0, degraded: true };
}

function closedDecision(item: StoreItem): Decision {
  const wait = Math.min(CLOSED_RETRY_MS, item.policy.periodMs);
  return {
    allowed: false,
    limit: item.policy.limit,
    remaining: 0,
    resetMs: wait,
    retryAfterMs: wait,
    reason: 'store-unavailable',
    degraded: true,
  };
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
      store().refund(m.key, m.policy, m.cost, nowMs);
    },
    reset(key, policy) {
      memory?.reset(key, scale(policy));
    },
  };
}

/** The policy with its limit (and burst) scaled by `share`, never below 1 unless it was 0. */
export function scalePolicy(p: ResolvedPolicy, share: number): ResolvedPolicy {
  const part = (n: number) => (n === 0 ? 0 : Math.max(1, Math.floor(n * share)));
  const resolved = resolvePolicy({
    algorithm: p.algorithm,
    limit: part(p.limit),
    period: p.periodMs,
    ...(isBucketAlgorithm(p.algorithm) ? { burst: part(p.burst) } : {}),
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
