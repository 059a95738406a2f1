/**
 * The options of one HTTP middleware, validated once at construction and resolved into what each step of a request
 * reads (no request looks at the raw options again).
 */
import { type Clock, systemClock } from '../core/clock.js';
import { SluiceError } from '../core/errors.js';
import type { CheckOptions } from '../limiter/create-limiter.js';
import type { RulesEngine } from '../rules/engine-types.js';
import { createMemoryStore } from '../stores/memory/memory-store.js';
import type { Store } from '../stores/store.js';
import type { AccessList } from './access-list.js';
import { checkOptions, toAccessList } from './check-options.js';
import { createInflightLimit, type TakePlace } from './concurrency.js';
import { LocalBlocks } from './controls.js';
import { createResponseCounting } from './count-by-response.js';
import type { HeaderMode, ResetFormat } from './headers.js';
import { createIdentity, type Identity } from './identity.js';
import { compileLimits, type LimitPlan, NO_PLAN } from './limits.js';
import type { LimitedEvent, RateLimitOptions } from './options.js';
import { previousInfo, type RateLimitInfo } from './rate-limit-info.js';
import { createRenderer } from './rejection.js';
import type { RequestAccess, RequestFn } from './request.js';
import { createKeyResolver } from './request-keys.js';
import { claimCounters } from './shared-counters.js';

/** A middleware's resolved options: what its request steps read. */
export interface MiddlewareSettings<Req> {
  readonly options: RateLimitOptions<Req>;
  readonly access: RequestAccess<Req>;
  readonly store: Store;
  /** The limits, compiled (`NO_PLAN` with rules). */
  readonly plan: LimitPlan<Req>;
  /** The rules engine's check of a request, when the limits come from rules. */
  readonly rulesCheck: RulesEngine['checkHttp'] | undefined;
  readonly allow: AccessList;
  readonly deny: AccessList;
  readonly headerMode: HeaderMode;
  readonly resetFormat: ResetFormat;
  readonly shadow: boolean;
  readonly shape: boolean;
  readonly maxDelayMs: number;
  readonly sleep: (ms: number) => Promise<void>;
  /** Settles a response by its status (skipFailedRequests, responseCost), when one of those is set. */
  readonly counting: ReturnType<typeof createResponseCounting<Req>>;
  readonly render: ReturnType<typeof createRenderer<Req>>;
  /** Takes a concurrency place, when `concurrency` is set. */
  readonly inflight: TakePlace | undefined;
  /** Keys `block()` blocked in this process. */
  readonly blocks: LocalBlocks;
  readonly clock: Clock;
  readonly limitedStatus: number;
  readonly identity: Identity<Req>;
  readonly skip: RequestFn<Req, boolean> | undefined;
  readonly onLimited: ((event: LimitedEvent<Req>) => void) | undefined;
  readonly keysOf: ReturnType<typeof createKeyResolver<Req>>;
  /** The cost of every request when `cost` is a number (undefined: the default, 1). */
  readonly fixedCost: CheckOptions | undefined;
  readonly costFn: RequestFn<Req, number> | undefined;
  /** True when some option is a function of the request, so each request needs its `HttpRequestInfo`. */
  readonly needsInfo: boolean;
  /** What earlier sluice middlewares applied to the request, from the adapter's request. */
  previousOf(req: Req): RateLimitInfo | undefined;
}

const defaultSleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * Validates and resolves a middleware's options once. `claim`: false when the adapter shares counters
 * with another of its own limiters on purpose (a Fastify route that only changes the plugin's cost).
 */
export function resolveSettings<Req>(
  options: RateLimitOptions<Req>,
  access: RequestAccess<Req>,
  extraKeys: ReadonlySet<string>,
  claim: boolean,
): MiddlewareSettings<Req> {
  checkOptions(options, extraKeys, access.name);
  const rules = options.rules;
  const store = rules?.store ?? options.store ?? createMemoryStore();
  const shape = options.mode === 'shape';
  // With rules, the limits come from the rules' `http:` section; there is no plan of our own.
  const plan: LimitPlan<Req> =
    rules === undefined ? compileLimits(options, { store, clock: options.clock, shape }) : NO_PLAN;
  if (claim && options.store !== undefined) claimPlanCounters(plan, store, options.shared === true);
  const costFn = typeof options.cost === 'function' ? options.cost : undefined;
  const rateLimitOf = access.rateLimitOf;
  return {
    options,
    access,
    store,
    plan,
    rulesCheck: rules === undefined ? undefined : (request) => rules.checkHttp(request),
    allow: toAccessList(options.allow, 'allow'),
    deny: toAccessList(options.deny, 'deny'),
    headerMode: options.headers ?? 'both',
    resetFormat: options.xRateLimitReset ?? 'seconds',
    shadow: options.shadow ?? false,
    shape,
    maxDelayMs: options.maxDelayMs ?? 1000,
    sleep: options.sleep ?? defaultSleep,
    counting: createResponseCounting(options),
    render: createRenderer(options, (req: Req) => access.header(req, 'accept')),
    inflight: inflightOf(options, store, shape || rules !== undefined),
    blocks: new LocalBlocks(),
    clock: options.clock ?? systemClock,
    limitedStatus: options.statusCode ?? 429,
    identity: createIdentity(options, access, options.peerAddress ?? access.peer),
    skip: options.skip,
    onLimited: options.onLimited,
    keysOf: createKeyResolver<Req>(options.key, options.name),
    fixedCost: typeof options.cost === 'number' ? { cost: options.cost } : undefined,
    costFn,
    needsInfo:
      options.skip !== undefined ||
      options.key !== undefined ||
      costFn !== undefined ||
      plan.fixed === undefined ||
      plan.fixed.limits.some((l) => l.key.kind === 'fn'),
    previousOf: (req) => (rateLimitOf === undefined ? undefined : previousInfo(rateLimitOf(req))),
  };
}

/** The `concurrency` option, compiled; it has no meaning with shaping or rules. */
function inflightOf<Req>(options: RateLimitOptions<Req>, store: Store, shapeOrRules: boolean): TakePlace | undefined {
  if (options.concurrency !== undefined && shapeOrRules) {
    throw new SluiceError('ERR_SLUICE_INVALID_OPTION', "concurrency: not with mode: 'shape' or rules", {
      option: 'concurrency',
    });
  }
  return createInflightLimit(options.concurrency, store, options.clock, options.name ?? 'default', options);
}

/** A store given by the user may be shared with other middlewares: claim this one's counters on it. */
function claimPlanCounters<Req>(plan: LimitPlan<Req>, store: Store, shared: boolean): void {
  if (plan.fixed === undefined) return;
  const claims = plan.fixed.limiter.limits.map((l) => ({
    id: l.policy.id,
    label: `'${l.name}' (${l.policy.algorithm} ${l.policy.limit} per ${l.policy.periodMs} ms)`,
  }));
  claimCounters(store, claims, shared);
}
