/**
 * The memory store's decisions: every algorithm's step on flat typed arrays, new keys stored only once they take
 * units, sliding logs, blocks, and forgetting keys least-first to stay within maxKeys and maxBytes.
 */
import { NUMERIC_ALGORITHMS, SLOT_WIDTH } from '../../algorithms/index.js';
import { SlidingLogState, slidingLog } from '../../algorithms/sliding-log.js';
import type { Algorithm, Slots } from '../../algorithms/types.js';
import type { Decision } from '../../core/decision.js';
import { SluiceError } from '../../core/errors.js';
import type { ResolvedPolicy } from '../../core/policy.js';
import { BlockList } from './block-list.js';
import { LeaseTable } from './lease-table.js';
import { keyBytes, LruSlab, type SlotOwner } from './lru-slab.js';

/** How a policy is decided: the numeric algorithms' hot path, a sliding log, or under a block duration. */
const NUMERIC = 0;
const LOG = 1;
const BLOCKED = 2;

type NumericName = keyof typeof NUMERIC_ALGORITHMS;
/** A key's state: a numeric algorithm's numbers in the slab (at the slot's offset), or a sliding log. */
type KeyState = Slots | SlidingLogState;

/** The step of a policy's algorithm, over either kind of state (a sliding log's step ignores the offset). */
const stepOf = (p: ResolvedPolicy): Algorithm<KeyState> =>
  p.algorithm === 'sliding-log' ? slidingLog : NUMERIC_ALGORITHMS[p.algorithm as NumericName];

/**
 * What the store keeps per policy: its key → slot table (a table per policy keeps lookups to the user's key,
 * with no string joining) and its algorithm's step.
 */
interface PolicyContext extends SlotOwner {
  readonly policy: ResolvedPolicy;
  readonly algorithm: Algorithm<KeyState>;
}

/** A policy's table and its entry in the map of policies. */
const policyBytes = (id: string) => 300 + id.length;

/** A sliding log's entries: 8 bytes per number, two numbers per admitted request, plus the array. */
const logBytes = (log: SlidingLogState) => 32 + 8 * log.entries.length;

const closedError = () => new SluiceError('ERR_SLUICE_STORE_CLOSED', 'the memory store was closed');

/**
 * The state of one memory store and its decisions. The hot path is {@link decide} on a stored key under a
 * numeric algorithm without a block: it and what it calls (decideAt, the algorithm's step, touch) are kept
 * small enough — their bytecode within V8's inlining budget, with the limiter's — for V8 to inline all of it
 * into the limiter's check. Every other case leaves it at its first test.
 */
export class MemoryDecider {
  readonly slab: LruSlab<PolicyContext>;
  readonly blocks: BlockList;
  readonly leases: LeaseTable;
  /**
   * The latest time the store has seen, in a Float64Array: moving it on (every new millisecond) then
   * allocates no number and takes no write barrier, as a field holding a double would.
   */
  readonly latest = new Float64Array(1);
  closed = false;
  /** State of a key not stored yet: checked here first, copied into a slot only if it consumed. */
  readonly #scratch = new Float64Array(SLOT_WIDTH);
  /**
   * policy.id → its context, added with the policy's first key and dropped with its last (/v1/check makes
   * policies), its bytes counted in the store's.
   */
  readonly #contexts = new Map<string, PolicyContext>();
  #contextBytes = 0;
  // The policy last looked up and its context (undefined: none yet). A limiter passes the same policy
  // object on every check, so this spares the hot path the lookup by id.
  #lastPolicy: ResolvedPolicy | undefined;
  #lastContext: PolicyContext | undefined;
  // How lastPolicy is decided (NUMERIC, LOG or BLOCKED), known once per policy so that a check
  // compares no algorithm names.
  #lastPath = NUMERIC;
  /** How much of its quota a stored key has used now, 0 (as good as fresh) to 1: the eviction order. */
  readonly #usedShare = (slot: number): number => this.#shareUsed(slot);

  readonly #maxBytes: number;

  constructor(maxBytes: number, maxKeys: number) {
    this.#maxBytes = maxBytes;
    this.slab = new LruSlab<PolicyContext>(maxKeys, (emptied) => {
      this.#contexts.delete(emptied.policy.id);
      this.#contextBytes -= policyBytes(emptied.policy.id);
      if (this.#lastContext === emptied) this.#lastPolicy = undefined;
    });
    this.blocks = new BlockList(maxKeys);
    // Leases may take half of maxBytes; past it a new lease is refused (forgetting one would over-admit).
    this.leases = new LeaseTable(maxKeys, Math.floor(maxBytes / 2));
  }

  /** Estimated bytes of everything the store holds. */
  get bytes(): number {
    return this.slab.bytes + this.#contextBytes + this.blocks.bytes + this.leases.bytes;
  }

  /** A check (see the class for its hot path). */
  decide(key: string, p: ResolvedPolicy, cost: number, nowMs: number, commit: boolean): Decision {
    if (this.closed) throw closedError();
    if (nowMs > (this.latest[0] as number)) this.latest[0] = nowMs;
    const context = p === this.#lastPolicy ? this.#lastContext : this.#existingContext(p);
    const slot = this.#lastPath === NUMERIC ? context?.table.get(key) : undefined;
    if (slot === undefined) return this.#decideOther(context, key, p, cost, nowMs, commit);
    return this.#decideAt(context as PolicyContext, slot, p, cost, nowMs, commit);
  }

  /**
   * Takes `cost` even past the limit (Store.charge): the key is stored whatever it held, its debt kept until paid.
   * Blocks are neither checked nor written.
   */
  charge(key: string, p: ResolvedPolicy, cost: number, nowMs: number): Decision {
    if (this.closed) throw closedError();
    if (nowMs > (this.latest[0] as number)) this.latest[0] = nowMs;
    const step = stepOf(p);
    let slot = this.#find(p, key, nowMs);
    // Nothing to take and nothing stored: a fresh key's look, without storing it.
    if (cost <= 0 && slot === -1) return step.check(this.#freshState(p), 0, nowMs, p, 0, false);
    if (slot === -1) slot = this.#store(key, p);
    if (p.algorithm === 'sliding-log') this.slab.logs[slot] ??= new SlidingLogState();
    const state = this.#stateOf(p, slot) as KeyState;
    const offset = slot * SLOT_WIDTH;
    const decision = step.charge(state, offset, nowMs, p, cost);
    this.#took(slot, key, step.expiresAt(state, offset, p));
    this.slab.touch(slot, decision.remaining === 0);
    return decision;
  }

  /** Gives `cost` units taken at `takenAtMs` back to a stored key. */
  refund(key: string, p: ResolvedPolicy, cost: number, nowMs: number, takenAtMs = nowMs): void {
    const slot = this.#find(p, key, nowMs);
    if (slot === -1) return;
    const state = this.#stateOf(p, slot);
    if (state !== undefined) stepOf(p).refund(state, slot * SLOT_WIDTH, nowMs, p, cost, takenAtMs);
    this.slab.touch(slot, false);
  }

  /** Forgets a key's state and block under `p`. */
  reset(key: string, p: ResolvedPolicy): void {
    const slot = this.#existingContext(p)?.table.get(key);
    if (slot !== undefined) this.slab.free(slot);
    this.blocks.unblock(p.id, key);
  }

  /** Forgets keys, least first, until the state fits in maxBytes again; never `keep` (-1: none to keep). */
  fitBytes(keep: number): void {
    while (this.bytes > this.#maxBytes && this.slab.size > 1) this.slab.evictOne(this.#usedShare, keep);
  }

  /** The policy's context, if it has one (and the path its checks take). */
  #existingContext(policy: ResolvedPolicy): PolicyContext | undefined {
    if (policy === this.#lastPolicy) return this.#lastContext;
    this.#lastPolicy = policy;
    this.#lastPath = policy.blockMs > 0 ? BLOCKED : policy.algorithm === 'sliding-log' ? LOG : NUMERIC;
    this.#lastContext = this.#contexts.get(policy.id);
    return this.#lastContext;
  }

  #contextOf(policy: ResolvedPolicy): PolicyContext {
    let context = this.#existingContext(policy);
    if (context === undefined) {
      context = { table: new Map(), policy, algorithm: stepOf(policy) };
      this.#contexts.set(policy.id, context);
      this.#contextBytes += policyBytes(policy.id);
      this.#lastContext = context;
    }
    return context;
  }

  /** The live slot of `key` under `policy`, or -1. An expired slot is zeroed on the way (lazy expiry). */
  #find(policy: ResolvedPolicy, key: string, nowMs: number): number {
    const slot = this.#existingContext(policy)?.table.get(key);
    if (slot === undefined) return -1;
    if ((this.slab.expiresAt[slot] as number) <= nowMs) this.slab.clear(slot);
    return slot;
  }

  #shareUsed(slot: number): number {
    const now = this.latest[0] as number;
    if ((this.slab.expiresAt[slot] as number) <= now) return 0;
    const { policy: p, algorithm } = this.slab.owners[slot] as PolicyContext;
    if (p.capacity === 0) return 1;
    const state = this.#stateOf(p, slot) ?? new SlidingLogState();
    return 1 - algorithm.check(state, slot * SLOT_WIDTH, now, p, 0, false).remaining / p.capacity;
  }

  /** Where a stored key's state is: the slab's numbers, or its sliding log (undefined: none yet, or expired). */
  #stateOf(p: ResolvedPolicy, slot: number): KeyState | undefined {
    return p.algorithm === 'sliding-log' ? this.slab.logs[slot] : this.slab.state;
  }

  /** The state of a key never seen, to decide on at offset 0 (the numbers are scratch, valid until the next check). */
  #freshState(p: ResolvedPolicy): KeyState {
    return p.algorithm === 'sliding-log' ? new SlidingLogState() : this.#scratch.fill(0);
  }

  /** A new slot for `key`, within maxKeys and maxBytes (forgetting others in the eviction order). */
  #store(key: string, p: ResolvedPolicy): number {
    const slot = this.slab.allocate(key, this.#contextOf(p), this.#usedShare);
    this.fitBytes(slot);
    return slot;
  }

  /** A numeric algorithm's step on a stored key, with the key's expiry and place in the LRU. */
  #decideAt(
    context: PolicyContext,
    slot: number,
    p: ResolvedPolicy,
    cost: number,
    nowMs: number,
    commit: boolean,
  ): Decision {
    const { algorithm } = context;
    const slab = this.slab;
    const offset = slot * SLOT_WIDTH;
    if ((slab.expiresAt[slot] as number) <= nowMs) slab.clear(slot);
    const decision = algorithm.check(slab.state, offset, nowMs, p, cost, commit);
    if (decision.allowed && commit && cost > 0) slab.expiresAt[slot] = algorithm.expiresAt(slab.state, offset, p);
    slab.touch(slot, decision.remaining === 0);
    return decision;
  }

  /** A new key, a sliding log, or a check under a block duration (decide has set lastPath for `p`). */
  #decideOther(
    context: PolicyContext | undefined,
    key: string,
    p: ResolvedPolicy,
    cost: number,
    nowMs: number,
    commit: boolean,
  ): Decision {
    if (this.#lastPath === NUMERIC) return this.#decideFresh(key, p, cost, nowMs, commit, -1);
    if (this.#lastPath === LOG) return this.#decideLog(context, key, p, cost, nowMs, commit);
    // Blocked: a blocked key is rejected, and a rejection blocks it.
    const blocked = this.blocks.check(p.id, key, nowMs, p.limit);
    if (blocked) return blocked;
    const slot = context?.table.get(key);
    const decision =
      p.algorithm === 'sliding-log'
        ? this.#decideLog(context, key, p, cost, nowMs, commit)
        : slot === undefined
          ? this.#decideFresh(key, p, cost, nowMs, commit, -1)
          : this.#decideAt(context as PolicyContext, slot, p, cost, nowMs, commit);
    if (!decision.allowed && commit) this.blocks.block(p.id, key, nowMs + p.blockMs);
    return decision;
  }

  /** A sliding log's check: a stored log is the hot path (find() written out, as in decide). */
  #decideLog(
    context: PolicyContext | undefined,
    key: string,
    p: ResolvedPolicy,
    cost: number,
    nowMs: number,
    commit: boolean,
  ): Decision {
    const slot = context?.table.get(key);
    if (slot === undefined) return this.#decideFresh(key, p, cost, nowMs, commit, -1);
    const slab = this.slab;
    if ((slab.expiresAt[slot] as number) <= nowMs) slab.clear(slot);
    const log = slab.logs[slot];
    if (log === undefined) return this.#decideFresh(key, p, cost, nowMs, commit, slot);
    const decision = slidingLog.check(log, 0, nowMs, p, cost, commit);
    // It took units: it now expires one period after its newest entry, at `nowMs` (slidingLog.expiresAt
    // without the call), and may have grown.
    if (decision.allowed && commit && cost > 0) this.#took(slot, key, nowMs + p.periodMs);
    slab.touch(slot, decision.remaining === 0);
    return decision;
  }

  /**
   * A key with no state (new, or a log that expired: `slot` is then still its own, else -1): decide on a
   * fresh state and store it only if the request took units, so rejected requests and peeks never grow the store.
   */
  #decideFresh(key: string, p: ResolvedPolicy, cost: number, nowMs: number, commit: boolean, slot: number): Decision {
    const step = stepOf(p);
    const state = this.#freshState(p);
    const decision = step.check(state, 0, nowMs, p, cost, commit);
    if (decision.allowed && commit && cost > 0) {
      const target = slot === -1 ? this.#store(key, p) : slot;
      const expiresAt = step.expiresAt(state, 0, p);
      if (state instanceof SlidingLogState) {
        this.slab.logs[target] = state;
        this.#took(target, key, expiresAt);
      } else {
        // A numeric state's bytes are its key's, counted and fitted by #store: only its numbers to copy.
        this.slab.state.set(this.#scratch, target * SLOT_WIDTH);
        this.slab.expiresAt[target] = expiresAt;
      }
      this.slab.touch(target, decision.remaining === 0);
    } else if (slot !== -1) {
      this.slab.touch(slot, decision.remaining === 0);
    }
    return decision;
  }

  /** A stored key took units: when its state is fresh again, and its bytes (a sliding log may have grown). */
  #took(slot: number, key: string, expiresAt: number): void {
    const log = this.slab.logs[slot];
    this.slab.expiresAt[slot] = expiresAt;
    this.slab.setBytes(slot, keyBytes(key) + (log === undefined ? 0 : logBytes(log)));
    this.fitBytes(slot);
  }
}
