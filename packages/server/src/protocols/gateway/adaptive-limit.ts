/**
 * The gateway's adaptive limit (`--adaptive`): one `sluice/adaptive` limiter shaped by the rules' priorities,
 * rebuilt when a reload names others, and a floor that keeps each priority's guaranteed places reachable.
 */
import {
  type AdaptiveDecision,
  type AdaptiveLimiter,
  type AdaptiveLimiterOptions,
  type AdaptiveStats,
  createAdaptiveLimiter,
  type PriorityFigures,
} from 'sluice/adaptive';
import { DEFAULT_GATEWAY_PRIORITIES, type RuleSet } from 'sluice/rules';

/** The gateway's adaptive limit, as the gateway, the metrics and the dashboard use it. */
export interface GatewayAdaptive {
  /**
   * A place for a request of `priority` (undefined or not one of the rules' priorities: the least important)
   * under the rules `ruleSet`, or a refusal. Never throws for overload.
   */
  take(ruleSet: RuleSet, priority: string | undefined): AdaptiveDecision;
  /** Figures since the start, across reloads: per priority of the rules in force, admitted and shed. */
  stats(): AdaptiveStats;
}

type Shape = readonly { readonly name: string; readonly share: number }[];

/** The priorities the rules name (`http.adaptive.priorities`, one file at most), else `fallback`. */
export function shapeOf(ruleSet: RuleSet, fallback: Shape): Shape {
  for (const rules of ruleSet.domains.values())
    if (rules.adaptivePriorities) return rules.adaptivePriorities.priorities;
  return fallback;
}

const keyOf = (shape: Shape) => shape.map((p) => `${p.name}=${p.share}`).join(',');

/**
 * Creates the gateway's adaptive limit. `options.priorities` stand in for the default ones; the rules'
 * `http.adaptive.priorities` win over both.
 *
 * Two things on top of the library's limiter:
 * - **A reload that names other priorities** (or shares) builds a new limiter, starting from the limit
 *   learnt so far. Requests in flight finish under the old one; for about one round trip after the reload
 *   they are not counted against the new limit. Admitted and shed counts carry over, by name.
 * - **A floor per priority**: a borrower is never preempted, so batch requests that took the whole limit
 *   while critical was idle would refuse critical until they finish — with a slow upstream, for as long as it
 *   takes. A request of a priority other than the least important, refused while its priority holds fewer
 *   places than it is guaranteed, is admitted over the limit (no latency sample) up to that guarantee; the
 *   refusal registers the demand, so the borrowers are refused from then on, and the upstream sees at most
 *   the limit plus the more important priorities' guarantees.
 */
export function createGatewayAdaptive(options: AdaptiveLimiterOptions, ruleSet: RuleSet): GatewayAdaptive {
  const fallback: Shape =
    options.priorities === undefined
      ? DEFAULT_GATEWAY_PRIORITIES
      : Object.entries(options.priorities).map(([name, share]) => ({ name, share }));
  const build = (shape: Shape, initialLimit?: number) =>
    createAdaptiveLimiter({
      ...options,
      ...(initialLimit === undefined ? {} : { initialLimit }),
      priorities: Object.fromEntries(shape.map((p) => [p.name, p.share])),
    });
  let key = keyOf(shapeOf(ruleSet, fallback));
  let limiter = build(shapeOf(ruleSet, fallback));
  let seen = ruleSet;
  /** Limiters replaced by a reload that still have requests in flight. */
  let retired: AdaptiveLimiter[] = [];
  const carried: Carried = new Map();
  const over: OverLimit = new Map();

  function reshape(next: RuleSet): void {
    seen = next;
    const shape = shapeOf(next, fallback);
    if (keyOf(shape) === key) return;
    for (const [name, f] of Object.entries(limiter.stats().priorities)) {
      const c = carried.get(name) ?? { admitted: 0, shed: 0 };
      carried.set(name, { admitted: c.admitted + f.admitted, shed: c.shed + f.shed });
    }
    retired = [...retired.filter((l) => l.inFlight > 0), limiter];
    limiter = build(shape, limiter.limit);
    key = keyOf(shape);
  }

  return {
    take(next, priority) {
      if (next !== seen) reshape(next);
      const known = priority !== undefined && limiter.priorities.includes(priority);
      const decision = limiter.tryAcquire(known ? { priority } : {});
      return decision.allowed || decision.reason !== 'limit' ? decision : admitOverLimit(limiter, over, decision);
    },
    stats() {
      retired = retired.filter((l) => l.inFlight > 0);
      return combinedStats(limiter, carried, over, retired);
    },
  };
}

/** Per name: admitted and shed by limiters a reload replaced. */
type Carried = Map<string, { admitted: number; shed: number }>;
/** Per name: requests admitted over the limit (counted as shed by the limiter, so taken off there), and held now. */
type OverLimit = Map<string, { admitted: number; held: number }>;

/** The floor: a refused request below its priority's guarantee goes over the limit (see createGatewayAdaptive). */
function admitOverLimit(
  limiter: AdaptiveLimiter,
  over: OverLimit,
  refused: AdaptiveDecision & { allowed: false },
): AdaptiveDecision {
  const names = limiter.priorities;
  const name = refused.priority;
  if (name === names[names.length - 1]) return refused;
  const figures = limiter.stats().priorities[name];
  let o = over.get(name);
  if (figures === undefined || figures.inFlight + (o?.held ?? 0) >= figures.guaranteed) return refused;
  if (o === undefined) {
    o = { admitted: 0, held: 0 };
    over.set(name, o);
  }
  const held = o;
  held.held++;
  held.admitted++;
  let released = false;
  return {
    allowed: true,
    priority: name,
    release() {
      if (released) return;
      released = true;
      held.held--;
    },
  };
}

/** The limiter's figures with what was carried over reloads, admitted over the limit, and still draining. */
function combinedStats(
  limiter: AdaptiveLimiter,
  carried: Carried,
  over: OverLimit,
  retired: readonly AdaptiveLimiter[],
): AdaptiveStats {
  const now = limiter.stats();
  const priorities: Record<string, PriorityFigures> = {};
  for (const [name, f] of Object.entries(now.priorities)) {
    const c = carried.get(name);
    const o = over.get(name);
    priorities[name] = {
      ...f,
      inFlight: f.inFlight + (o?.held ?? 0),
      admitted: f.admitted + (c?.admitted ?? 0) + (o?.admitted ?? 0),
      shed: f.shed + (c?.shed ?? 0) - (o?.admitted ?? 0),
    };
  }
  let extra = 0;
  for (const o of over.values()) extra += o.held;
  for (const l of retired) extra += l.inFlight;
  return { ...now, inFlight: now.inFlight + extra, priorities };
}
