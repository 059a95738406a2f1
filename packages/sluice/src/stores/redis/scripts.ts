/**
 * The Lua scripts the Redis store runs, as sources with their SHA1s for EVALSHA, and policies encoded as script
 * arguments (in hexadecimal, which Redis reads faster).
 */
import { createHash } from 'node:crypto';
import type { AlgorithmName, ResolvedPolicy } from '../../core/policy.js';
import { hexArg } from './hex.js';
import { ALGORITHM_CODES, BATCH_POLICY_FIELDS, batchPolicyKind, checkScriptSource, SCRIPT_SOURCES } from './lua.js';

/** A Lua script and its SHA1, for EVALSHA. */
export interface Script {
  readonly name: string;
  readonly source: string;
  readonly sha: string;
}

function script(name: string, source: string): Script {
  return { name, source, sha: createHash('sha1').update(source).digest('hex') };
}

/** The batch-check script of each algorithm: one script per algorithm, holding only its own Lua. */
export const CHECK_SCRIPTS: Readonly<Record<AlgorithmName, Script>> = Object.fromEntries(
  Object.entries(ALGORITHM_CODES).map(([name, code]) => [name, script(`check:${name}`, checkScriptSource(code))]),
) as Record<AlgorithmName, Script>;

/** All-or-nothing checks of several limits (any algorithms). */
export const MANY_SCRIPT = script('many', SCRIPT_SOURCES.many);
/** Refunds of several items (any algorithms). */
export const REFUND_SCRIPT = script('refund', SCRIPT_SOURCES.refund);
/** Takes a concurrency lease. */
export const ACQUIRE_SCRIPT = script('acquire', SCRIPT_SOURCES.acquire);
/** Ends a concurrency lease. */
export const RELEASE_SCRIPT = script('release', SCRIPT_SOURCES.release);

/**
 * Every script, loaded when the store first connects: each source once (the token bucket's batch
 * script is GCRA's: they keep the same state and decide alike).
 */
export const ALL_SCRIPTS: readonly Script[] = [
  ...new Map(
    [...Object.values(CHECK_SCRIPTS), MANY_SCRIPT, REFUND_SCRIPT, ACQUIRE_SCRIPT, RELEASE_SCRIPT].map((s) => [
      s.sha,
      s,
    ]),
  ).values(),
];

const encoded = new WeakMap<ResolvedPolicy, readonly string[]>();

/**
 * A policy as the 8 ARGV the scripts read (cached per policy object), in hexadecimal: every number of a
 * ResolvedPolicy is a whole number below 2^53 (hex.ts: 6 % of a lone decision's instructions in Redis
 * went to parsing them as decimal).
 */
export function policyArgs(p: ResolvedPolicy): readonly string[] {
  let args = encoded.get(p);
  if (args === undefined) {
    args = [
      ALGORITHM_CODES[p.algorithm],
      p.limit,
      p.periodMs,
      p.capacity,
      p.scale,
      p.intervalTicks,
      p.capacityTicks,
      p.blockMs,
    ].map(hexArg);
    encoded.set(p, args);
  }
  return args;
}

const encodedForBatch = new WeakMap<ResolvedPolicy, readonly string[]>();

/** A policy as its algorithm's batch script reads it (BATCH_POLICY_FIELDS in lua.ts), cached per policy. */
export function batchPolicyArgs(p: ResolvedPolicy): readonly string[] {
  let args = encodedForBatch.get(p);
  if (args === undefined) {
    args = BATCH_POLICY_FIELDS[batchPolicyKind(ALGORITHM_CODES[p.algorithm])].map((field) => hexArg(p[field]));
    encodedForBatch.set(p, args);
  }
  return args;
}

/** Policy scripts shared by equal policies, up to a bound (a process may make many stores). */
const byContent = new Map<string, Script>();
const MAX_SHARED = 1024;
const ownScripts = new WeakMap<ResolvedPolicy, Script>();

/**
 * The batch-check script of one policy: its algorithm's, with the policy written into the source
 * (policy-scripts.ts says when a store uses it). Cached per policy object and by content.
 */
export function policyScript(p: ResolvedPolicy): Script {
  let s = ownScripts.get(p);
  if (s === undefined) {
    const code = ALGORITHM_CODES[p.algorithm];
    const content = `${code}:${batchPolicyArgs(p).join(':')}`;
    s = byContent.get(content);
    if (s === undefined) {
      s = script(`check:${p.algorithm}:${content}`, checkScriptSource(code, p));
      if (byContent.size < MAX_SHARED) byContent.set(content, s);
    }
    ownScripts.set(p, s);
  }
  return s;
}
