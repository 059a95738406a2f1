/** The `sluice:decision` diagnostics channel: every limiter's checks published to it while anyone subscribes. */
import type { LimiterDecision } from './limiter-decision.js';
import type { LimiterKey } from './limiter-key.js';

/** The name of the channel every limiter publishes its checks on (`node:diagnostics_channel`). */
export const DECISION_CHANNEL = 'sluice:decision';

/**
 * What `sluice:decision` carries for each `check` or `checkSync`: the decision, or the error the check
 * threw. Built only while the channel has subscribers.
 */
export interface DecisionMessage {
  /** The limiter's `name` option, when it has one. */
  readonly name: string | undefined;
  /** The names of the limiter's limits, in order (one for a single-limit limiter). */
  readonly limits: readonly string[];
  /** The key the check was given. A subscriber exporting telemetry should not make it an attribute. */
  readonly key: LimiterKey;
  /** Units the check asked for. */
  readonly cost: number;
  /** The answer (each limit's in `decision.results` for a multi-limit limiter); absent when the check threw. */
  readonly decision: LimiterDecision | undefined;
  /** What the check threw (misuse, or a store failure the failure policy does not answer); absent otherwise. */
  readonly error: unknown;
}

/** The part of a diagnostics channel a limiter uses. */
export interface DecisionChannel {
  readonly hasSubscribers: boolean;
  publish(message: unknown): void;
  subscribe(onMessage: (message: unknown, name: string | symbol) => void): void;
}

interface ChannelModule {
  channel(name: string): DecisionChannel;
}

/**
 * Node's `diagnostics_channel` found without an import (the library also runs on Workers, Deno and Bun,
 * where a top-level `node:` import may fail): `process.getBuiltinModule` (Node ≥ 20.16, Deno, Bun,
 * Workers with nodejs_compat). Elsewhere a channel nobody can subscribe to.
 */
function openChannel(): DecisionChannel {
  const proc = (globalThis as { process?: { getBuiltinModule?: (id: string) => unknown } }).process;
  try {
    const dc = proc?.getBuiltinModule?.('node:diagnostics_channel') as ChannelModule | undefined;
    if (dc !== undefined && typeof dc.channel === 'function') return dc.channel(DECISION_CHANNEL);
  } catch {
    // A runtime that lists the function but refuses the module: nobody can subscribe there.
  }
  return { hasSubscribers: false, publish() {}, subscribe() {} };
}

/** The channel itself, held here so Node keeps it (it holds channels weakly). */
export const decisionChannel: DecisionChannel = openChannel();

/** Who a limiter's messages name: its `name` option and its limits' names. */
export interface DecisionSource {
  readonly name: string | undefined;
  readonly limits: readonly string[];
}

/*
 * The limiter's own `check` and `checkSync` read `decisionChannel.hasSubscribers` first and call these only when it
 * is true: with nobody listening a check costs that one read (no wrapper call, message, closure or promise), which
 * bench/observability-ab.ts measures against the library before the hook.
 */

/** Runs a synchronous check and publishes its decision, or what it threw. */
export function publishedSync(
  source: DecisionSource,
  key: LimiterKey,
  options: { cost?: number } | undefined,
  decide: () => LimiterDecision,
): LimiterDecision {
  let decision: LimiterDecision;
  try {
    decision = decide();
  } catch (error) {
    publish(source, key, options, undefined, error);
    throw error;
  }
  publish(source, key, options, decision);
  return decision;
}

/** Publishes a pending check's decision, or its rejection, when it settles. */
export function publishedAsync(
  source: DecisionSource,
  key: LimiterKey,
  options: { cost?: number } | undefined,
  pending: Promise<LimiterDecision>,
): Promise<LimiterDecision> {
  return pending.then(
    (decision) => {
      publish(source, key, options, decision);
      return decision;
    },
    (error: unknown) => {
      publish(source, key, options, undefined, error);
      throw error;
    },
  );
}

function publish(
  { name, limits }: DecisionSource,
  key: LimiterKey,
  options: { cost?: number } | undefined,
  decision?: LimiterDecision,
  error?: unknown,
): void {
  // The cost the check asked for (a bad one has already thrown).
  const message: DecisionMessage = { name, limits, key, cost: options?.cost ?? 1, decision, error };
  decisionChannel.publish(message);
}
