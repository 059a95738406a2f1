/**
 * How sluice reads a Fastify request (peer, headers, body, the client address Fastify resolved), and Fastify's own
 * `trustProxy` setting, warned about when it trusts every peer.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { nodeHeader, type RequestAccess } from '../../http/index.js';
import { warnOnce } from '../../http/warn.js';

/** How sluice reads a Fastify request. */
export const fastifyAccess: RequestAccess<FastifyRequest> = {
  name: 'Fastify',
  peer: (request) => request.raw.socket.remoteAddress,
  header: (request, name) => nodeHeader(request.raw.headers, name),
  method: (request) => request.raw.method ?? 'GET',
  url: (request) => request.raw.url ?? '/',
  headers: (request) => request.raw.headers,
  rateLimitOf: (request) => request.rateLimit,
  // Parsed by the time of the preHandler hook, where the tokenBudget option reserves.
  body: (request) => request.body,
  // Fastify's own `trustProxy`, unless sluice's is given: `request.ip` is the client as Fastify
  // resolved it (proxy-addr, from the right through trusted hops).
  framework: {
    setting: 'Fastify({ trustProxy })',
    example: "Fastify({ trustProxy: '127.0.0.1,10.0.0.0/8' })",
    // With `trustProxy` set, Fastify builds its requests with an `ips` accessor (and only then).
    clientIp: (request) => ('ips' in request ? request.ip : undefined),
    // Warned about when the plugin loads, where the setting can be read (see trustSettingOf).
    permissive: () => false,
  },
};

/**
 * The `trustProxy` a Fastify instance was created with. Fastify keeps its options under a private
 * symbol and leaves `trustProxy` out of `initialConfig`, so it is found by the symbol's description;
 * read once, when the plugin loads.
 */
function trustSettingOf(fastify: object): unknown {
  const key = Object.getOwnPropertySymbols(fastify).find((s) => s.description === 'fastify.options');
  return key === undefined
    ? undefined
    : (fastify as Record<symbol, { trustProxy?: unknown } | undefined>)[key]?.trustProxy;
}

/** Warns once when the instance trusts every peer and sluice has no `trustProxy` of its own. */
export function warnPermissiveTrust(fastify: FastifyInstance, ownTrustProxy: unknown): void {
  if (ownTrustProxy !== undefined || trustSettingOf(fastify) !== true) return;
  warnOnce(
    'SLUICE_PERMISSIVE_TRUST_PROXY',
    "sluice: Fastify's trustProxy is true, which trusts every peer, so any client can pick its own rate-limit " +
      "key by sending X-Forwarded-For. Trust only your proxies (e.g. Fastify({ trustProxy: '127.0.0.1,10.0.0.0/8' })), " +
      "or give sluice its own: rateLimit({ trustProxy: ['10.0.0.0/8'] }).",
  );
}
