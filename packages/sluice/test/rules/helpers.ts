import { createManualClock, type ManualClock } from '../../src/core/clock.js';
import {
  createRulesEngine,
  type DescriptorStatus,
  parseRules,
  type RateLimitRequest,
  type RuleSet,
  type RulesEngine,
  type RulesEngineOptions,
} from '../../src/rules/index.js';
import { createMemoryStore } from '../../src/stores/memory/memory-store.js';
import type { Store } from '../../src/stores/store.js';

/** 2024-01-01T00:00:00Z: aligned to every unit but week and month, so windows start at the test's start. */
export const T0 = Date.UTC(2024, 0, 1);

/** Parses YAML rules (one file per string) or fails the test with the issues. */
export function rules(...texts: string[]): RuleSet {
  const result = parseRules(texts.map((text, i) => ({ file: `rules-${i}.yaml`, text })));
  if (!result.ok) throw new Error(result.issues.map((i) => `${i.line}:${i.column} ${i.code} ${i.message}`).join('\n'));
  return result.ruleSet;
}

export interface Harness {
  engine: RulesEngine;
  clock: ManualClock;
  store: Store;
  /** Asks about one domain with descriptors given as `[['key', 'value'], ...]` lists. */
  ask(domain: string, ...descriptors: [string, string][][]): ReturnType<RulesEngine['shouldRateLimit']>;
  /** Shorthand for the only status of a one-descriptor request. */
  one(domain: string, ...entries: [string, string][]): Promise<DescriptorStatus>;
}

/** An engine on a memory store (unless given another) and a manual clock at T0. */
export function harness(ruleSet: RuleSet, options: Partial<RulesEngineOptions> = {}): Harness {
  const clock = createManualClock(T0);
  const store = options.store ?? createMemoryStore({ sweepIntervalMs: 0 });
  const engine = createRulesEngine({ ruleSet, store, clock, ...options });
  const ask = (domain: string, ...descriptors: [string, string][][]) =>
    engine.shouldRateLimit(request(domain, ...descriptors));
  return {
    engine,
    clock,
    store,
    ask,
    one: async (domain, ...entries) => (await ask(domain, entries)).statuses[0] as DescriptorStatus,
  };
}

/** A request with descriptors given as `[['key', 'value'], ...]` lists. */
export function request(domain: string, ...descriptors: [string, string][][]): RateLimitRequest {
  return {
    domain,
    descriptors: descriptors.map((entries) => ({ entries: entries.map(([key, value]) => ({ key, value })) })),
  };
}
