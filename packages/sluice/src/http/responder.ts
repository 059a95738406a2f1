/**
 * What a middleware answers: a passed request's outcome with its rate-limit headers, and a rejection — after giving
 * back what earlier sluice middlewares took for the request, so a rejected request consumes nothing.
 */
import type { LimiterDecision } from '../limiter/create-limiter.js';
import type { AfterResponse } from './count-by-response.js';
import { listedHeaders, rateLimitHeaders } from './headers.js';
import type { MiddlewareSettings } from './middleware-settings.js';
import { type HttpOutcome, PASS } from './outcome.js';
import {
  type AppliedLimitInfo,
  appendInfo,
  bindingOf,
  giveBackEarlier,
  givenBack,
  type RateLimitInfo,
  tookEarlier,
} from './rate-limit-info.js';
import { type RejectionKind, rejectionInfo } from './rejection.js';
import type { Awaitable } from './request.js';

/** Builds a middleware's outcomes. */
export interface Responder<Req> {
  /** The outcome of a request that passed: the headers of every limit applied so far. */
  passed(decision: LimiterDecision, info: RateLimitInfo, afterResponse: AfterResponse | undefined): HttpOutcome;
  /**
   * A request a limit refused (or a failed store): reported to `onLimited`, then rejected — or let
   * through in shadow mode. `own` is what this middleware applied.
   */
  refused(
    req: Req,
    ip: string,
    decision: LimiterDecision,
    limitName: string,
    own: AppliedLimitInfo[],
  ): Awaitable<HttpOutcome>;
  /** The rejection, after giving back what earlier sluice middlewares took for the request. */
  reject(
    kind: RejectionKind,
    decision: LimiterDecision | undefined,
    limitName: string | undefined,
    info: RateLimitInfo | undefined,
    req: Req,
  ): Awaitable<HttpOutcome>;
  /**
   * A response's settling by status (skipFailedRequests, responseCost), unless a later middleware
   * rejected the request and gave back what this one took (settling it again would give it twice).
   */
  settled(req: Req, mine: RateLimitInfo, counted: AfterResponse): AfterResponse;
}

/** Creates the outcomes of a middleware with settings `s`. */
export function createResponder<Req>(s: MiddlewareSettings<Req>): Responder<Req> {
  const { headerMode, resetFormat, clock, render, limitedStatus, previousOf, onLimited, shadow } = s;
  const epoch = resetFormat === 'epoch';

  /** The headers of every limit applied so far; one limit (the usual case) takes the short path. */
  function headersOf(info: RateLimitInfo): string[] {
    const nowMs = epoch ? clock.now() : 0;
    if (info.limits.length === 1) {
      const only = info.limits[0] as AppliedLimitInfo;
      return rateLimitHeaders(only.decision, only.header, headerMode, resetFormat, nowMs);
    }
    return listedHeaders(info.limits, bindingOf(info), headerMode, resetFormat, nowMs);
  }

  function passed(decision: LimiterDecision, info: RateLimitInfo, afterResponse: AfterResponse | undefined) {
    return {
      pass: true,
      headers: headersOf(info),
      status: 0,
      body: '',
      contentType: '',
      rejection: undefined,
      decision,
      info,
      afterResponse,
    };
  }

  function refused(req: Req, ip: string, decision: LimiterDecision, limitName: string, own: AppliedLimitInfo[]) {
    const kind: RejectionKind = decision.reason === 'store-unavailable' ? 'unavailable' : 'limited';
    if (kind === 'limited') onLimited?.({ req, ip, decision, limitName, shadow });
    return shadow ? PASS : reject(kind, decision, limitName, appendInfo(previousOf(req), own), req);
  }

  function reject(
    kind: RejectionKind,
    decision: LimiterDecision | undefined,
    limitName: string | undefined,
    info: RateLimitInfo | undefined,
    req: Req,
  ): Awaitable<HttpOutcome> {
    const previous = previousOf(req);
    if (previous === undefined || !tookEarlier(previous)) return rejectNow(kind, decision, limitName, info, req);
    return giveBackEarlier(previous).then((restored) => {
      // Without info of its own (a deny list, a missing key), the restored info goes on the request, so
      // the earlier middlewares see that they gave back; with it, its own limits follow the restored ones.
      const after = info === undefined ? restored : appendInfo(restored, info.limits.slice(previous.limits.length));
      return rejectNow(kind, decision, limitName, after, req);
    });
  }

  function rejectNow(
    kind: RejectionKind,
    decision: LimiterDecision | undefined,
    limitName: string | undefined,
    info: RateLimitInfo | undefined,
    req: Req,
  ): HttpOutcome {
    const rejection = rejectionInfo(kind, decision, limitName, limitedStatus);
    // A request over a limit lists the limits applied; every rejection says when to retry, when it can.
    const headers = kind === 'limited' && info !== undefined ? headersOf(info) : [];
    if (rejection.retryAfter !== null) headers.push('retry-after', String(rejection.retryAfter));
    const { body, contentType } = render(rejection, req);
    const status = rejection.status;
    return { pass: false, headers, status, body, contentType, rejection, decision, info, afterResponse: undefined };
  }

  function settled(req: Req, mine: RateLimitInfo, counted: AfterResponse): AfterResponse {
    return (status: number) => (givenBack(previousOf(req), mine) ? Promise.resolve() : counted(status));
  }

  return { passed, refused, reject, settled };
}
