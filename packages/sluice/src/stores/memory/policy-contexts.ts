/**
 * The memory store's policies: a key → slot table per policy, found by the policy's id or by its table, added with
 * the policy's first key and dropped with its last, counted in the store's bytes (/v1/check makes policies).
 */
import type { Algorithm } from '../../algorithms/index.js';
import { NUMERIC_ALGORITHMS } from '../../algorithms/index.js';
import type { ResolvedPolicy } from '../../core/policy.js';

/** What the store keeps per policy. */
export interface PolicyContext {
  readonly table: Map<string, number>;
  readonly policy: ResolvedPolicy;
  /** The numeric algorithm (unused for sliding-log, whose state is a log). */
  readonly algorithm: Algorithm;
}

type NumericName = keyof typeof NUMERIC_ALGORITHMS;

/** A policy's table and its entry in the map of policies. */
const policyBytes = (id: string) => 300 + id.length;

/**
 * policy.id → the policy's algorithm and its key → slot table. A table per policy keeps lookups to the user's
 * key with no string joining, and one lookup here finds both.
 */
export class PolicyContexts {
  private readonly byId = new Map<string, PolicyContext>();
  private readonly byTable = new Map<Map<string, number>, PolicyContext>();
  /** Estimated bytes of every policy's table and entry. */
  bytes = 0;

  get(id: string): PolicyContext | undefined {
    return this.byId.get(id);
  }

  ofTable(table: Map<string, number>): PolicyContext | undefined {
    return this.byTable.get(table);
  }

  /** A new, empty context for `policy`. */
  add(policy: ResolvedPolicy): PolicyContext {
    const context = { table: new Map(), policy, algorithm: NUMERIC_ALGORITHMS[policy.algorithm as NumericName] };
    this.byId.set(policy.id, context);
    this.byTable.set(context.table, context);
    this.bytes += policyBytes(policy.id);
    return context;
  }

  /** Drops the context whose table lost its last key; returns it (undefined: not a policy's table). */
  drop(table: Map<string, number>): PolicyContext | undefined {
    const context = this.byTable.get(table);
    if (context === undefined) return undefined;
    this.byTable.delete(table);
    this.byId.delete(context.policy.id);
    this.bytes -= policyBytes(context.policy.id);
    return context;
  }
}
