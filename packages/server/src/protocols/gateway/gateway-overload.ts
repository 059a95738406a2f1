/**
 * The gateway's overload control (`sluice serve --upstream … --adaptive ALG`): an admitted request takes
 * a place in the upstream's adaptive limit or is answered 503 with `Retry-After` before it reaches the
 * upstream's queue; its place comes back when the response is done (a 5xx or an unfinished one counts
 * as dropped).
 */
import type { ServerResponse } from 'node:http';
import type { AdaptiveLimiter } from 'sluice/adaptive';
import { errorAnswer, type GatewayAnswer } from './gateway-answer.js';

/** Takes a place for the request behind `res`, or answers what to send instead (503). */
export function takeUpstreamPlace(limiter: AdaptiveLimiter, res: ServerResponse): GatewayAnswer | undefined {
  const permit = limiter.tryAcquire();
  if (!permit.allowed) {
    const seconds = Math.max(1, Math.ceil(permit.retryAfterMs / 1000));
    return errorAnswer(
      503,
      'OVERLOADED',
      `The upstream is at its current concurrency limit (${permit.limit}); retry in ${seconds} second${seconds === 1 ? '' : 's'}.`,
      { 'retry-after': String(seconds) },
    );
  }
  // 'close' follows 'finish' on every response, and comes alone when the client or upstream went away.
  res.once('close', () => permit.release(res.writableFinished && res.statusCode < 500 ? 'success' : 'dropped'));
  return undefined;
}
