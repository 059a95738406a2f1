/**
 * Admission: the checks every gateway request goes through before it is proxied or tunnelled, in order —
 * an origin-form target, a free in-flight slot for its client, the decision — answered at once when no
 * wait is needed, else as a promise.
 */
import type { IncomingMessage } from 'node:http';
import { acceptsProblem } from 'sluice/http';
import { normalizePath, type RateLimitResponse } from 'sluice/rules';
import type { Logger } from '../../observability/logger.js';
import type { ClientSlots } from './client-slots.js';
import { errorAnswer, failureAnswer, type GatewayAnswer, refusal, type Verdict } from './gateway-answer.js';
import { type DecideRequest, type GatewayDecision, verdictOf } from './gateway-decision.js';

/** A request let through: its target, client address, the headers to add, and the key its slot is held under. */
export interface Admitted {
  ok: true;
  target: string;
  ip: string;
  headers: Record<string, string>;
  key: string;
}

/** Whether a request may go on — or what to answer instead. */
export type Admission = Admitted | { ok: false; answer: GatewayAnswer };

/** What admission needs. */
export interface AdmissionOptions {
  readonly decide: DecideRequest;
  readonly slots: ClientSlots;
  readonly maxClientInFlight: number;
  readonly logger: Logger;
  /** The client address of a request (trusted proxies applied). */
  clientIp(req: IncomingMessage): string;
  /** The key a client address counts under (IPv6: its network). */
  clientKey(ip: string): string;
}

const BAD_PATH = errorAnswer(
  400,
  'ERR_SLUICE_BAD_PATH',
  "send an origin-form request target: a path starting with '/', %-escapes of two hex digits, no '#'",
);

/** Admits requests; see the file's comment. The closures of the promise path are made only on that path. */
export function createAdmission(options: AdmissionOptions): (req: IncomingMessage) => Admission | Promise<Admission> {
  const { decide, slots, logger } = options;
  const tooMany = errorAnswer(
    429,
    'ERR_SLUICE_TOO_MANY_IN_FLIGHT',
    `at most ${options.maxClientInFlight} requests per client may be in flight through the gateway`,
    { 'retry-after': '1' },
  );

  /**
   * The admission of a decided request whose client holds a slot (given back here when it is refused);
   * `response`: the one domain's decision, whose over-limit statuses a problem-details 429 names.
   */
  function admitted(
    verdict: Verdict,
    req: IncomingMessage,
    target: string,
    ip: string,
    key: string,
    response?: RateLimitResponse,
  ): Admission {
    let refused: GatewayAnswer | undefined;
    try {
      refused = verdict.verdict === 'pass' ? undefined : refusal(verdict, acceptsProblem(req.headers.accept), response);
    } catch (error) {
      return failed(key, error);
    }
    if (refused !== undefined) {
      slots.release(key);
      return { ok: false, answer: refused };
    }
    return { ok: true, target, ip, headers: verdict.headers, key };
  }

  function failed(key: string, error: unknown): Admission {
    slots.release(key);
    return { ok: false, answer: failureAnswer(error, logger) };
  }

  return (req) => {
    const target = targetOf(req);
    if (target === undefined) return { ok: false, answer: BAD_PATH };
    const ip = options.clientIp(req);
    const key = options.clientKey(ip);
    if (!slots.acquire(key)) return { ok: false, answer: tooMany };
    let decision: GatewayDecision;
    try {
      decision = decide(req, target, ip, key);
    } catch (error) {
      return failed(key, error);
    }
    if (!(decision instanceof Promise)) {
      return 'verdict' in decision
        ? admitted(decision, req, target, ip, key)
        : admitted(verdictOf(decision), req, target, ip, key, decision);
    }
    return decision.then(
      (v) => ('verdict' in v ? admitted(v, req, target, ip, key) : admitted(verdictOf(v), req, target, ip, key, v)),
      (error: unknown) => failed(key, error),
    );
  };
}

/**
 * The request's target, its path normalised and its query as sent: what the rules see and what is
 * forwarded, the same. Undefined for anything else than an origin-form target with valid escapes — an
 * absolute-form (`http://host/login`) or asterisk-form target too: an upstream would read its path its own way.
 */
function targetOf(req: IncomingMessage): string | undefined {
  const url = req.url ?? '/';
  // A request target never carries a fragment (RFC 9112 §3.2), but Node passes a raw `#` through and an
  // upstream may cut the target there: `/login#x` would be matched as `/login#x` and served as `/login`.
  // (An escaped `%23` is no fragment: it stays escaped in the path, for the rules and the upstream alike.)
  if (url.includes('#')) return undefined;
  const q = url.indexOf('?');
  const path = normalizePath(q === -1 ? url : url.slice(0, q));
  if (path === undefined) return undefined;
  return q === -1 ? path : path + url.slice(q);
}
