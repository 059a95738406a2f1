/** The gateway (with `gateway.upstream`): the reverse proxy, with client addresses resolved as the options say. */
import type { IncomingMessage, Server } from 'node:http';
import type { Clock, Store } from 'sluice';
import { SluiceError } from 'sluice';
import { createClientIpResolver } from 'sluice/http';
import type { RulesEngine } from 'sluice/rules';
import type { AccessLists } from '../core/access-lists.js';
import type { Decider } from '../core/decide.js';
import type { DecisionHub } from '../observability/decision-events.js';
import type { Logger } from '../observability/logger.js';
import type { ServiceMetrics } from '../observability/metrics.js';
import { createGatewayAdaptive } from '../protocols/gateway/adaptive-limit.js';
import { createTrustCheck } from '../protocols/gateway/forwarding.js';
import { createGateway } from '../protocols/gateway/gateway.js';
import type { GatewayServiceOptions } from './service-options.js';

/** What the gateway decides with. */
export interface GatewayParts {
  readonly engine: RulesEngine;
  readonly decider: Decider;
  readonly lists: AccessLists;
  readonly metrics: ServiceMetrics;
  readonly logger: Logger;
  /** Where the rules' `llm:` token budgets count. */
  readonly store: Store;
  readonly clock: Clock;
  readonly hub: DecisionHub;
}

/** The gateway's server (not listening yet), or undefined without `options`. */
export function createServiceGateway(options: GatewayServiceOptions | undefined, parts: GatewayParts) {
  if (options === undefined) return undefined;
  const upstream = parseUpstream(options.upstream);
  const resolver = createClientIpResolver({
    ...(options.trustProxy === undefined ? {} : { trustProxy: options.trustProxy }),
    ipv6Subnet: options.ipv6Subnet ?? 56,
  });
  const trustsPeer = createTrustCheck(options.trustProxy);
  // Shaped by the rules' priorities (critical, normal, batch unless they name their own), reshaped on reloads.
  const adaptive = options.adaptive && createGatewayAdaptive(options.adaptive, parts.engine.ruleSet);
  const { store, clock, hub, ...shared } = parts;
  const server: Server = createGateway({
    ...shared,
    llm: { store, clock, hub },
    upstream,
    // A module-level header reader: no closure made per gateway request.
    clientIp: (req) => resolver.clientIp(req.socket.remoteAddress, req, requestHeader),
    // The network address an IPv6 client counts under (its /56), without the prefix length.
    clientKey: (ip) => {
      const key = resolver.ipKey(ip);
      // The regex only for keys with a prefix length (IPv6): this runs for every gateway request.
      return key.includes('/') ? key.replace(/\/\d+$/, '') : key;
    },
    trustsPeer: (req) => trustsPeer(req.socket.remoteAddress ?? ''),
    ...(options.limits === undefined ? {} : { limits: options.limits }),
    ...(adaptive === undefined ? {} : { adaptive }),
  });
  return { server, upstream, adaptive };
}

/** A request header as one string (repeated fields joined), for the client address resolver. */
function requestHeader(req: IncomingMessage, name: string): string | undefined {
  const value = req.headers[name];
  return Array.isArray(value) ? value.join(', ') : value;
}

function parseUpstream(text: string): URL {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw invalidUpstream(`'${text}' is not a URL (e.g. http://127.0.0.1:3000)`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw invalidUpstream(`use an http:// or https:// URL, not ${url.protocol}`);
  }
  return url;
}

function invalidUpstream(message: string): SluiceError {
  return new SluiceError('ERR_SLUICE_INVALID_OPTION', `upstream: ${message}`, { option: 'upstream' });
}
