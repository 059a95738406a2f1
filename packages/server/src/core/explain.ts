/**
 * The service's explain: what the decider would answer a request now (allow and deny lists, then the rules engine's
 * look at the counters), for envoy descriptors or an HTTP request through the gateway's rules, consuming nothing.
 */
import type { Clock, Store } from 'sluice';
import {
  type ExplainedDescriptor,
  explainRequest,
  httpDescriptorsFor,
  type RateLimitRequest,
  type RequestExplanation,
  type RuleHttpRequest,
  type RuleSet,
  type RulesEngineOptions,
} from 'sluice/rules';
import type { AccessLists, ListName } from './access-lists.js';

/** What decided a request, in the order the decider asks. */
export type ExplainVerdict =
  | 'deny-list'
  | 'allow-list'
  | 'no-rule'
  | 'within-limits'
  | 'over-limit'
  | 'shadow'
  | 'degraded';

/** A descriptor an access list answered before the rules: the list and the entry that matched. */
export interface ListedDescriptor {
  readonly index: number;
  readonly list: ListName;
  readonly entry: { readonly key: string; readonly value: string };
}

/** A descriptor as explained: the rules engine's account, or the access list that answered it first. */
export type ServiceDescriptor =
  | ExplainedDescriptor
  | {
      readonly entries: readonly { readonly key: string; readonly value: string }[];
      readonly outcome: 'deny-list' | 'allow-list';
      /** The entry the list matched. */
      readonly entry: { readonly key: string; readonly value: string };
    };

/** One domain's explanation: the rules engine's, with the descriptors the access lists answered in their places. */
export interface DomainExplanation extends Omit<RequestExplanation, 'descriptors'> {
  readonly domain: string;
  /** What decided: a list, no rule, the limits, global or rule shadow mode, a failure policy. */
  readonly verdict: ExplainVerdict;
  /** In the request's order. */
  readonly descriptors: readonly ServiceDescriptor[];
}

/** The explanation of a request the service could be asked. */
export interface ServiceExplanation {
  readonly overallCode: 'OK' | 'OVER_LIMIT';
  readonly verdict: ExplainVerdict;
  readonly domains: readonly DomainExplanation[];
  /** The HTTP request's client address when the deny or allow list answered for it before any rule. */
  readonly addressList?: ListName;
}

/** Options of {@link createExplainer}. */
export interface ExplainerOptions {
  /** The rules in force (they change on reload). */
  readonly ruleSet: () => RuleSet;
  readonly store: Store;
  readonly clock: Clock;
  readonly lists: AccessLists;
  /** The engine's decision options, as the service made it. */
  readonly decision: Pick<RulesEngineOptions, 'fail' | 'insuranceShare' | 'shadow' | 'quota'>;
}

/** Explains envoy requests and gateway HTTP requests. */
export interface Explainer {
  envoy(request: RateLimitRequest): Promise<ServiceExplanation>;
  http(request: RuleHttpRequest): Promise<ServiceExplanation>;
}

/** Creates the explainer; nothing it does consumes from a counter. */
export function createExplainer(options: ExplainerOptions): Explainer {
  const { lists } = options;

  async function domain(request: RateLimitRequest): Promise<DomainExplanation> {
    const listed = listedOf(lists, request);
    const denied = listed.some((l) => l.list === 'deny');
    const rest = request.descriptors.filter((_, i) => !listed.some((l) => l.index === i));
    const engineOptions = {
      ...options.decision,
      ruleSet: options.ruleSet(),
      store: options.store,
      clock: options.clock,
    };
    const explained =
      rest.length === 0
        ? {
            atMs: options.clock.now(),
            domainKnown: options.ruleSet().domains.has(request.domain),
            overallCode: 'OK' as const,
            shadowed: false,
            degraded: false,
            descriptors: [],
          }
        : await explainRequest(engineOptions, { ...request, descriptors: rest });
    const overallCode = denied ? 'OVER_LIMIT' : explained.overallCode;
    let next = 0;
    const descriptors = request.descriptors.map((d, i): ServiceDescriptor => {
      const l = listed.find((x) => x.index === i);
      if (l === undefined) return explained.descriptors[next++] as ExplainedDescriptor;
      return {
        entries: d.entries.map((e) => ({ key: e.key, value: e.value })),
        outcome: `${l.list}-list`,
        entry: l.entry,
      };
    });
    const verdict = verdictOf(explained, listed);
    return { ...explained, domain: request.domain, overallCode, verdict, descriptors };
  }

  return {
    async envoy(request) {
      const one = await domain(request);
      return { overallCode: one.overallCode, verdict: one.verdict, domains: [one] };
    },
    async http(request) {
      // The gateway asks the lists about the client's address before it reads any rule.
      const addressList = lists.match('', 'remote_address', request.remoteAddress);
      if (addressList !== undefined) {
        return {
          overallCode: addressList === 'deny' ? 'OVER_LIMIT' : 'OK',
          verdict: addressList === 'deny' ? 'deny-list' : 'allow-list',
          domains: [],
          addressList,
        };
      }
      const groups = httpDescriptorsFor(options.ruleSet(), request);
      const domains: DomainExplanation[] = [];
      for (const group of groups) domains.push(await domain(group));
      const over = domains.find((d) => d.overallCode === 'OVER_LIMIT');
      const verdict = over?.verdict ?? domains.find((d) => d.verdict !== 'no-rule')?.verdict ?? 'no-rule';
      return { overallCode: over === undefined ? 'OK' : 'OVER_LIMIT', verdict, domains };
    },
  };
}

/** The descriptors an access list answers, with the entry that matched (deny wins within a descriptor). */
function listedOf(lists: AccessLists, request: RateLimitRequest): ListedDescriptor[] {
  if (lists.size === 0) return [];
  const out: ListedDescriptor[] = [];
  for (const [index, d] of request.descriptors.entries()) {
    let found: ListedDescriptor | undefined;
    for (const entry of d.entries) {
      const list = lists.match(request.domain, entry.key, entry.value);
      if (list === undefined || found?.list === 'deny') continue;
      if (list === 'deny' || found === undefined)
        found = { index, list, entry: { key: entry.key, value: entry.value } };
    }
    if (found !== undefined) out.push(found);
  }
  return out;
}

function verdictOf(explained: RequestExplanation, listed: readonly ListedDescriptor[]): ExplainVerdict {
  if (listed.some((l) => l.list === 'deny')) return 'deny-list';
  if (explained.degraded) return 'degraded';
  if (explained.shadowed) return 'shadow';
  if (explained.overallCode === 'OVER_LIMIT') return 'over-limit';
  if (explained.descriptors.some((d) => d.shadow && d.limits.some((l) => !l.allowed))) return 'shadow';
  if (explained.descriptors.some((d) => d.outcome !== 'no-rule')) return 'within-limits';
  return listed.length > 0 ? 'allow-list' : 'no-rule';
}
