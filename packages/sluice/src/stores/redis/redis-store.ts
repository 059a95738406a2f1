/**
 * The Redis store: each decision one Lua script call (atomic, one round trip), with batching, deadlines and the local over-limit cache.
 */
import type { Decision } from '../../core/decision.js';
import { SluiceError } from '../../core/errors.js';
import type { ResolvedPolicy } from '../../core/policy.js';
import { randomLeaseId } from '../lease-id.js';
import {
  acceptsFallback,
  type CheckWithFallback,
  type Lease,
  type LeaseDecision,
  type Store,
  type StoreItem,
} from '../store.js';
import { Batcher, type Job } from './batcher.js';
import { createTransport, type RedisClientLike } from './client.js';
import { compactWidth, DECISION_WIDTH, decodeCompact, decodeDecision, undecided } from './decode.js';
import { blockKey, keyIdOf, leaseKey, slotOf, stateKey, tagOf, validatePrefix } from './keys.js';
import { LocalCache } from './local-cache.js';
import { PolicyScripts } from './policy-scripts.js';
import { Runner } from './runner.js';
import { type ScriptItem, scriptCall } from './script-args.js';
import {
  ACQUIRE_SCRIPT,
  ALL_SCRIPTS,
  CHECK_SCRIPTS,
  MANY_SCRIPT,
  REFUND_SCRIPT,
  RELEASE_SCRIPT,
  type Script,
} from './scripts.js';

/** Options of {@link createRedisStore}. */
export interface RedisStoreOptions {
  /** An ioredis `Redis` or `Cluster`, or a node-redis client or cluster, already configured. */
  client: RedisClientLike;
  /** Prepended to every key; must not contain `{` or `}`. @default 'sluice:' */
  prefix?: string;
  /**
   * Whose clock decides: `'server'` uses Redis's (`TIME`, or a stored key's expiry), so application
   * servers with skewed clocks agree; `'client'` uses the `nowMs` the limiter passes (tests with a manual
   * clock, or Redis versions that cannot write after `TIME` in a script). @default 'server'
   */
  clock?: 'server' | 'client';
  /** Longest wait for Redis, in ms; past it the call fails with ERR_SLUICE_STORE_TIMEOUT. @default 50 */
  timeoutMs?: number;
  /**
   * How long, from the store's creation, commands wait for the client's first connection (and the
   * scripts' loading) instead of failing: the first requests of a process that starts under load are
   * decided by Redis, exactly, not by the failure policy. 0 = never wait. A client that was connected
   * and lost its connection still fails fast. @default 5000
   */
  connectTimeoutMs?: number;
  /**
   * Called with store failures (timeouts, Redis errors, a lost connection — reported once per outage,
   * not once per call while the client is known to be down), e.g. to log or count them.
   */
  onError?: (error: SluiceError) => void;
  /**
   * Answer keys known to be over their limit in-process, without a round trip, until they can pass
   * again. `{ maxKeys }` bounds it. @default true (10 000 keys)
   */
  localCache?: boolean | { maxKeys?: number };
  /**
   * Send the checks that arrive in the same event-loop turn as one script call per algorithm (and the multi-limit
   * checks as one more): independent decisions, in arrival order, with fewer commands for Redis and for
   * the client to encode — and under a burst one reply instead of hundreds queued behind each other,
   * which would each risk the timeout. @default true
   */
  batch?: boolean;
}

/** What a Redis store did, for metrics, tests and benchmarks. */
export interface RedisStoreStats {
  /** Commands sent to Redis. */
  commands: number;
  /** Decisions made (by Redis or from the local cache). */
  decisions: number;
  /** Decisions answered by the local over-limit cache, without Redis. */
  localCacheHits: number;
  /** Keys the local cache holds now. */
  localCacheKeys: number;
  errors: number;
  timeouts: number;
  /** Scripts sent again in full after Redis forgot them. */
  scriptLoads: number;
  /**
   * Requests Redis could not decide because it refused the write they needed (maxmemory reached with
   * noeviction, a read-only replica): each went to the failure policy; the rest of its batch did not.
   */
  refused: number;
}

/** The Redis store. */
export interface RedisStore extends Store {
  readonly synchronous: false;
  check(key: string, policy: ResolvedPolicy, cost: number, nowMs: number, commit: boolean): Promise<Decision>;
  checkMany(items: readonly StoreItem[], nowMs: number, commit: boolean): Promise<Decision[]>;
  refund(key: string, policy: ResolvedPolicy, cost: number, nowMs: number): Promise<void>;
  reset(key: string, policy: ResolvedPolicy): Promise<void>;
  acquire(key: string, limit: number, leaseMs: number, nowMs: number): Promise<LeaseDecision>;
  release(lease: Lease, nowMs: number): Promise<boolean>;
  /** Counters of commands, decisions, local cache hits and failures. */
  stats(): RedisStoreStats;
  /**
   * Resolves once the client has connected and the scripts are loaded — for applications that hold
   * traffic until the store can decide; rejects with ERR_SLUICE_STORE_TIMEOUT after `timeoutMs`.
   * @default timeoutMs: the store's connectTimeoutMs
   */
  ready(timeoutMs?: number): Promise<void>;
  /** True once the client has connected and the scripts are loaded (stays true through later outages). */
  readonly isReady: boolean;
}

/**
 * With the client clock, TTLs get this much extra so that state never expires in Redis before the
 * callers' clocks say it may: application servers disagree a little, and a test's manual clock may
 * stand still while real time passes. State past its expiry equals a fresh one, so longer is safe.
 */
const CLIENT_CLOCK_GRACE_MS = '60000';

/**
 * Creates a store that keeps counters in Redis: one script run (EVALSHA) per decision, atomic, with
 * every key under a TTL. Works with standalone Redis, Sentinel (through the client) and Cluster.
 *
 * @example
 * import Redis from 'ioredis';
 * import { createLimiter } from 'sluice';
 * import { createRedisStore } from 'sluice/redis';
 *
 * const store = createRedisStore({ client: new Redis('redis://127.0.0.1:6379') });
 * const limiter = createLimiter({ algorithm: 'sliding-window', limit: 100, period: '1m', store, fail: 'open' });
 * const d = await limiter.check('user:42');
 */
export function createRedisStore(options: RedisStoreOptions): RedisStore {
  if (options === null || typeof options !== 'object') {
    throw new SluiceError('ERR_SLUICE_INVALID_OPTION', 'createRedisStore: expected an options object');
  }
  const transport = createTransport(options.client);
  const prefix = validatePrefix(options.prefix ?? 'sluice:');
  const clock = options.clock ?? 'server';
  if (clock !== 'server' && clock !== 'client') {
    throw new SluiceError('ERR_SLUICE_INVALID_OPTION', `clock: expected 'server' or 'client', got ${String(clock)}`, {
      option: 'clock',
    });
  }
  const timeoutMs = options.timeoutMs ?? 50;
  if (typeof timeoutMs !== 'number' || !(timeoutMs >= 1) || timeoutMs > 2 ** 31 - 1) {
    throw new SluiceError('ERR_SLUICE_INVALID_OPTION', 'timeoutMs: expected a number of ms ≥ 1', {
      option: 'timeoutMs',
    });
  }
  const connectTimeoutMs = options.connectTimeoutMs ?? 5000;
  if (
    typeof connectTimeoutMs !== 'number' ||
    !Number.isInteger(connectTimeoutMs) ||
    connectTimeoutMs < 0 ||
    connectTimeoutMs > 2 ** 31 - 1
  ) {
    throw new SluiceError('ERR_SLUICE_INVALID_OPTION', 'connectTimeoutMs: expected a whole number of ms ≥ 0', {
      option: 'connectTimeoutMs',
    });
  }
  if (options.onError !== undefined && typeof options.onError !== 'function') {
    throw new SluiceError('ERR_SLUICE_INVALID_OPTION', 'onError: expected a function', { option: 'onError' });
  }
  const cacheOption = options.localCache ?? true;
  const cacheKeys = typeof cacheOption === 'object' ? (cacheOption.maxKeys ?? 10_000) : 10_000;
  if (!Number.isInteger(cacheKeys) || cacheKeys < 1) {
    throw new SluiceError('ERR_SLUICE_INVALID_OPTION', 'localCache.maxKeys: expected a whole number ≥ 1', {
      option: 'localCache.maxKeys',
    });
  }
  const cache = cacheOption === false ? undefined : new LocalCache(cacheKeys);
  const batching = options.batch ?? true;
  const runner = new Runner(transport, timeoutMs, options.onError, ALL_SCRIPTS, connectTimeoutMs);
  const serverClock = clock === 'server';
  const grace = serverClock ? '0' : CLIENT_CLOCK_GRACE_MS;
  const nowArg = (nowMs: number) => (serverClock ? '' : String(nowMs));
  let decisions = 0;

  // ---- script calls, batched per script (and per slot on a cluster, per time with the client clock)

  /** Script calls sent and not answered yet. */
  let inFlight = 0;
  const batcher = new Batcher(sendJobs, batching, () => inFlight === 0);
  const policyScripts = new PolicyScripts((script) => runner.readiness.addScript(script));

  function queueKey(script: Script, key: string, nowMs: number): string {
    let queue = script.name;
    if (transport.cluster) queue += `@${slotOf(key)}`;
    if (!serverClock) queue += `#${nowMs}`;
    return queue;
  }

  function sendJobs(jobs: readonly Job[]): void {
    const first = jobs[0] as Job;
    const batch = first.script !== MANY_SCRIPT;
    // A batch goes to the script of its first item's policy once Redis has it (policy-scripts.ts).
    const policy = (first.items[0] as ScriptItem).policy;
    const own = batch ? policyScripts.get(policy) : undefined;
    const script = own ?? first.script;
    const argv = scriptCall(
      script,
      [nowArg(first.nowMs), grace],
      jobs.length === 1 ? first.items : jobs.flatMap((j) => j.items),
      batch,
      own === undefined ? undefined : policy,
    );
    inFlight++;
    runner.callThen(script, argv, (error, reply) => {
      inFlight--;
      if (error !== undefined) {
        for (const job of jobs) job.fail(error);
        return;
      }
      // A batch script's lone packed decision is the whole reply (lua.ts, PACKED_RESET_LIMIT).
      const r = typeof reply === 'number' ? [reply] : (reply as unknown[]);
      // Where the decisions of the job starting at `at` end: a batch script's take 1 or 6 integers each.
      const after = (job: Job, at: number) => {
        if (!batch) return at + job.width * DECISION_WIDTH;
        for (let k = 0; k < job.width; k++) at += compactWidth(r, at);
        return at;
      };
      let end = 0;
      for (const job of jobs) end = after(job, end);
      // Items Redis could not decide (it refused their write) share one error, reported once per call.
      let refusal: SluiceError | undefined;
      const refused = () => {
        runner.stats.refused++;
        refusal ??= runner.refused(String(r[end] ?? 'write refused'));
        return refusal;
      };
      let offset = 0;
      for (const job of jobs) {
        job.settle(r, offset, refused);
        offset = after(job, offset);
      }
    });
  }

  /** The fields of the usual check (commit, cost 1), shared: no array and no string per check. */
  const USUAL_FIELDS: readonly string[] = ['1', '1'];

  /** A check; with a `fallback` (a limiter's failure policy), failures resolve with its answer. */
  const check: CheckWithFallback<Promise<Decision>> = (key, policy, cost, nowMs, commit, fallback) => {
    if (runner.closed) {
      if (fallback === undefined) return Promise.reject(closedError());
      return new Promise((resolve) => resolve(fallback(closedError(), key, cost, nowMs, commit)));
    }
    decisions++;
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

  // ---- several limits, all or nothing

  interface ManyItem {
    readonly key: string;
    readonly bkey: string;
    readonly item: StoreItem;
  }
  const toScriptItem = ({ key, bkey, item }: ManyItem): ScriptItem => ({
    key,
    bkey,
    policy: item.policy,
    fields: [String(item.cost)],
  });

  /** Runs the all-or-nothing script on items that share a slot; with `wantLooks`, also the looks. */
  function runMany(
    group: readonly ManyItem[],
    nowMs: number,
    commit: boolean,
    wantLooks: boolean,
  ): Promise<{ decisions: Decision[]; looks: Decision[] }> {
    const items = group.map(toScriptItem);
    // The request's header (commit, looks, item count) goes before its first item's fields.
    items[0] = {
      ...(items[0] as ScriptItem),
      fields: [
        commit ? '1' : '0',
        wantLooks ? '1' : '0',
        String(items.length),
        String((group[0] as ManyItem).item.cost),
      ],
    };
    const n = group.length;
    return new Promise((resolve, reject) => {
      batcher.add({
        script: MANY_SCRIPT,
        queueKey: queueKey(MANY_SCRIPT, (group[0] as ManyItem).key, nowMs),
        nowMs,
        items,
        width: wantLooks ? 2 * n : n,
        settle(r, offset, refused) {
          // All or nothing: a request one of whose writes was refused is undecided as a whole.
          if (group.some((_, i) => undecided(r, offset + i * DECISION_WIDTH, false))) {
            reject(refused());
            return;
          }
          const decisions = group.map((g, i) => decodeDecision(r, offset + i * DECISION_WIDTH, g.item.policy.limit));
          const looks = wantLooks
            ? group.map((g, i) => decodeDecision(r, offset + (n + i) * DECISION_WIDTH, g.item.policy.limit))
            : decisions;
          resolve({ decisions, looks });
        },
        fail: reject,
      });
    });
  }

  function runRefunds(group: readonly ManyItem[], nowMs: number): Promise<unknown> {
    return runner.call(REFUND_SCRIPT, scriptCall(REFUND_SCRIPT, [nowArg(nowMs), grace], group.map(toScriptItem)));
  }

  async function checkMany(items: readonly StoreItem[], nowMs: number, commit: boolean): Promise<Decision[]> {
    if (runner.closed) throw closedError();
    if (items.length === 0) return [];
    decisions += items.length;
    const all: ManyItem[] = items.map((item) => {
      const tag = tagOf(prefix, item.key);
      return { key: stateKey(tag, keyIdOf(item.policy)), bkey: blockKey(tag, keyIdOf(item.policy)), item };
    });
    if (cache !== undefined && all.every((m) => m.item.policy.blockMs === 0)) {
      // Only when every limit is known to reject: the answer must be the one Redis would give for all.
      const cached = all.map((m) => cache.get(m.key, m.item.policy, m.item.cost, nowMs));
      if (cached.every((d) => d !== undefined)) return cached as Decision[];
    }
    const groups = groupBySlot(all);
    let result: Decision[];
    if (groups.length === 1) {
      result = (await runMany(all, nowMs, commit, false)).decisions;
    } else {
      result = await checkAcrossSlots(all, groups, nowMs, commit);
    }
    if (cache !== undefined && new Set(all.map((m) => m.key)).size === all.length) {
      // (With a key twice, a rejection may have been followed by a refund: nothing to learn.)
      for (const [i, m] of all.entries()) {
        cache.learn(m.key, m.item.policy, m.item.cost, nowMs, commit, result[i] as Decision, true);
      }
    }
    return result;
  }

  function groupBySlot(all: readonly ManyItem[]): ManyItem[][] {
    if (!transport.cluster) return [all as ManyItem[]];
    const bySlot = new Map<number, ManyItem[]>();
    for (const m of all) {
      const slot = slotOf(m.key);
      const group = bySlot.get(slot);
      if (group === undefined) bySlot.set(slot, [m]);
      else group.push(m);
    }
    return [...bySlot.values()];
  }

  /**
   * Cluster, keys in several slots: one script per slot, all sent at once (one round trip), then the
   * slots that consumed are refunded when another slot rejected. The answer is the one a single
   * atomic step would have given: the looks of the refunded slots, the decisions of the others.
   */
  async function checkAcrossSlots(
    all: readonly ManyItem[],
    groups: readonly ManyItem[][],
    nowMs: number,
    commit: boolean,
  ): Promise<Decision[]> {
    const settled = await Promise.allSettled(groups.map((g) => runMany(g, nowMs, commit, commit)));
    const failure = settled.find((s) => s.status === 'rejected');
    const consumed = (i: number) => {
      const s = settled[i];
      return commit && s?.status === 'fulfilled' && s.value.decisions.every((d) => d.allowed);
    };
    const allowed = settled.every((s) => s.status === 'fulfilled' && s.value.decisions.every((d) => d.allowed));
    if (failure !== undefined || (commit && !allowed)) {
      const refunds = groups.flatMap((g, i) => (consumed(i) ? [runRefunds(g, nowMs)] : []));
      if (failure !== undefined) {
        // Give back what the slots that answered took, but do not wait: the request fails anyway.
        for (const r of refunds) r.catch(() => undefined);
        throw (failure as PromiseRejectedResult).reason;
      }
      await Promise.all(refunds);
    }
    const byItem = new Map<ManyItem, Decision>();
    groups.forEach((g, i) => {
      const s = settled[i] as PromiseFulfilledResult<{ decisions: Decision[]; looks: Decision[] }>;
      const chosen = commit && !allowed && consumed(i) ? s.value.looks : s.value.decisions;
      g.forEach((m, j) => {
        byItem.set(m, chosen[j] as Decision);
      });
    });
    return all.map((m) => byItem.get(m) as Decision);
  }

  // ---- the rest of the Store interface

  return acceptsFallback({
    name: 'redis',
    synchronous: false,
    check,
    checkMany,

    async refund(key, policy, cost, nowMs) {
      const tag = tagOf(prefix, key);
      const key0 = stateKey(tag, keyIdOf(policy));
      cache?.forget(key0);
      await runRefunds([{ key: key0, bkey: blockKey(tag, keyIdOf(policy)), item: { key, policy, cost } }], nowMs);
    },

    async reset(key, policy) {
      const tag = tagOf(prefix, key);
      const key0 = stateKey(tag, keyIdOf(policy));
      cache?.forget(key0);
      await runner.command(['DEL', key0, blockKey(tag, keyIdOf(policy))], key0);
    },

    async acquire(key, limit, leaseMs, nowMs) {
      const lkey = leaseKey(tagOf(prefix, key));
      const id = randomLeaseId();
      const args = [nowArg(nowMs), grace, String(limit), String(leaseMs), id];
      const r = (await runner.script(ACQUIRE_SCRIPT, [lkey], args)) as unknown[];
      const d: LeaseDecision = decodeDecision(r, 0, limit);
      if (d.allowed) d.lease = { key, id, expiresAt: Number(r[7]) };
      return d;
    },

    async release(lease: Lease, nowMs) {
      const lkey = leaseKey(tagOf(prefix, lease.key));
      return Number(await runner.script(RELEASE_SCRIPT, [lkey], [nowArg(nowMs), grace, lease.id])) === 1;
    },

    async close() {
      // Checks already queued still go out; close() resolves once every command has settled (at most
      // timeoutMs). The client is the caller's: it stays open.
      batcher.flush();
      await runner.close();
    },

    ready: (waitMs) => runner.readiness.wait(waitMs),
    get isReady() {
      return runner.readiness.isReady;
    },

    stats: () => ({
      ...runner.stats,
      decisions,
      localCacheHits: cache?.hits ?? 0,
      localCacheKeys: cache?.size ?? 0,
    }),
  });
}

function closedError(): SluiceError {
  return new SluiceError('ERR_SLUICE_STORE_CLOSED', 'the redis store was closed');
}
