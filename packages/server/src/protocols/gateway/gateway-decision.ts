/**
 * The gateway's decision on one request: the allow and deny lists, then the config's `http:` rules turned
 * into descriptors (worked out once per client address when only the address matters) and decided.
 */
import type { IncomingMessage } from 'node:http';
import { combineDecisions } from 'sluice';
import type { HttpDomainDescriptors, RulesEngine } from 'sluice/rules';
import { httpDescriptorsFor } from 'sluice/rules';
import type { AccessLists } from '../../core/access-lists.js';
import type { Decided, Decider } from '../../core/decide.js';
import { assertRequestLengths } from '../../rls/codec.js';
import { AddressDescriptors } from './address-descriptors.js';
import { DENIED, PASS, type Verdict } from './gateway-answer.js';

/** A verdict made without the store, a decision made at once, or one to wait for. */
export type GatewayDecision = Verdict | Decided | Promise<Decided | Verdict>;

/** Decides `req` (its path and query as forwarded, its client's address and the key that address counts under). */
export type DecideRequest = (req: IncomingMessage, target: string, ip: string, key: string) => GatewayDecision;

/**
 * The verdict on a request: at once when no decision is needed (a list entry, no `http:` rule matched) or
 * the decider answers at once (one domain on the memory store), else once the decider has answered (one
 * domain's decision is made a verdict by the caller, in its own promise step). Plain promise steps, not
 * async functions: this runs for every request.
 */
export function createRequestDecision(engine: RulesEngine, decider: Decider, lists: AccessLists): DecideRequest {
  // The usual config limits per client address only: its descriptors are worked out once per client.
  const addressDescriptors = new AddressDescriptors();
  // The decider's synchronous entry (it throws what decide() would reject with), when it has one.
  const decideNow = decider.decideNow?.bind(decider);
  return (req, target, ip, key) => {
    const list = lists.match('', 'remote_address', ip);
    if (list === 'deny') return DENIED;
    if (list === 'allow') return PASS;
    const ruleSet = engine.ruleSet;
    let groups = addressDescriptors.get(ruleSet, key);
    if (groups === undefined) {
      groups = httpDescriptorsFor(ruleSet, {
        method: req.method ?? 'GET',
        // The path and query as forwarded: `query_parameters` rules read the query from it.
        path: target,
        headers: req.headers,
        remoteAddress: key,
      });
      for (const group of groups) assertRequestLengths(group);
      addressDescriptors.set(key, groups);
    }
    if (groups.length === 0) return PASS;
    // At once when the store answers at once (the memory store: no promise, no closure, no microtask).
    // A group is a request as it is ({ domain, descriptors }), checked when it was worked out.
    const group = groups[0] as HttpDomainDescriptors;
    if (groups.length === 1) {
      return decideNow === undefined ? decider.decide(group, 'gateway') : decideNow(group, 'gateway');
    }
    return decideGroups(decider, groups);
  };
}

/** One decided domain: its headers, and a refusal when it is over the limit. */
export function verdictOf(answer: Decided): Verdict {
  if (answer.overallCode !== 'OVER_LIMIT') return { verdict: 'pass', headers: answer.headers };
  const binding = answer.binding;
  return {
    verdict: binding?.reason === 'denied' ? 'denied' : 'limited',
    headers: answer.headers,
    ...(binding ? { binding } : {}),
  };
}

/** Several domains' rules matched: decided one after another, the closest to exhaustion reported. */
async function decideGroups(decider: Decider, groups: readonly HttpDomainDescriptors[]): Promise<Verdict> {
  const answers: Decided[] = [];
  for (const group of groups) answers.push(await decider.decide(group, 'gateway'));
  const bindings = answers.flatMap((a) => (a.binding === undefined ? [] : [a.binding]));
  const binding = bindings.length === 0 ? undefined : combineDecisions(bindings);
  const chosen = answers.find((a) => a.binding === binding) ?? answers[0];
  const headers = chosen?.headers ?? {};
  if (answers.some((a) => a.overallCode === 'OVER_LIMIT')) {
    return { verdict: binding?.reason === 'denied' ? 'denied' : 'limited', headers, ...(binding ? { binding } : {}) };
  }
  return { verdict: 'pass', headers };
}
