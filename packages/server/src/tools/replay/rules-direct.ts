/**
 * The replay's short cut past the rules engine: a request of one descriptor whose rule is plain (one limit, no
 * `replaces`, shadow, quota or unlimited) is decided, after the engine decided it once, by the memory store's
 * synchronous `checkMany` with the very item the engine asked for — the same counter key, policy and store, so
 * the same decision — without matching, validating and building an answer a million times.
 */
import type { MemoryStore, StoreItem } from 'sluice';
import type { DescriptorLevel, DescriptorNode, DescriptorStatus, RuleSet } from 'sluice/rules';

/** A request's plan: the engine's store item, and the status its rule answers with (for the rule's name). */
export interface DirectPlan {
  readonly item: StoreItem;
  readonly statuses: readonly DescriptorStatus[];
  /** The rule that decides: the limit's name, else the rule's id. */
  readonly rule: string;
}

/** The engine's own bound on a request's hits (rules/request.ts): a cost past it goes to the engine, which refuses it. */
const MAX_HITS = 1_000_000_000;

/** The store calls the engine makes, seen through a proxy of the memory store. */
export interface WatchedStore {
  readonly store: MemoryStore;
  /** The `checkMany` calls since the last `reset`. */
  readonly calls: { items: readonly StoreItem[]; commit: boolean }[];
}

/** `memory` behind a proxy that notes each `checkMany` call (everything else is the store's own). */
export function watchStore(memory: MemoryStore): WatchedStore {
  const calls: WatchedStore['calls'] = [];
  const store = new Proxy(memory, {
    get(target, prop) {
      if (prop === 'checkMany') {
        return (items: readonly StoreItem[], nowMs: number, commit: boolean) => {
          calls.push({ items, commit });
          return target.checkMany(items, nowMs, commit);
        };
      }
      const value = Reflect.get(target, prop, target);
      // Bound to the store itself: its methods use private fields, which a proxy does not have.
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
  return { store, calls };
}

function collect(level: DescriptorLevel, into: Map<string, DescriptorNode>): void {
  for (const node of level.all) {
    into.set(node.id, node);
    collect(node.children, into);
  }
}

/** Every rule of `ruleSet` by id. */
export function nodesById(ruleSet: RuleSet): Map<string, DescriptorNode> {
  const nodes = new Map<string, DescriptorNode>();
  for (const rules of ruleSet.domains.values()) collect(rules.root, nodes);
  return nodes;
}

/** A rule the engine decides with one store item and nothing after: its fast path, no shadow, quota or replaces. */
const plain = (node: DescriptorNode | undefined): node is DescriptorNode =>
  node !== undefined &&
  node.limits.length === 1 &&
  node.replaces.length === 0 &&
  !node.shadow &&
  !node.quotaMode &&
  !node.unlimited;

/**
 * The plan of a request of one descriptor the engine just decided (its answer `statuses`, its store calls
 * `calls`), or undefined when the engine must keep deciding it.
 */
export function directPlan(
  nodes: ReadonlyMap<string, DescriptorNode>,
  descriptors: number,
  statuses: readonly DescriptorStatus[],
  calls: WatchedStore['calls'],
): DirectPlan | undefined {
  const status = statuses[0];
  const call = calls[0];
  if (descriptors !== 1 || statuses.length !== 1 || calls.length !== 1 || status === undefined || call === undefined) {
    return undefined;
  }
  if (!call.commit || call.items.length !== 1 || status.ruleId === undefined || status.shadow) return undefined;
  const node = nodes.get(status.ruleId);
  const item = call.items[0];
  if (!plain(node) || item === undefined || item.policy !== node.limits[0]?.policy) return undefined;
  return { item, statuses, rule: status.ruleName ?? status.ruleId };
}

/** Decides `plan` at `nowMs` for `cost` on the store; undefined when the cost is one the engine must judge. */
export function decideDirect(store: MemoryStore, plan: DirectPlan, cost: number, nowMs: number): boolean | undefined {
  if (!Number.isInteger(cost) || cost < 0 || cost > MAX_HITS) return undefined;
  // The engine's cost: a request always takes at least one hit (rules/request.ts).
  const decisions = store.checkMany([{ ...plan.item, cost: Math.max(1, cost) }], nowMs, true);
  if (decisions instanceof Promise) throw new Error('the memory store answered with a promise');
  return !(decisions[0]?.allowed ?? true);
}
