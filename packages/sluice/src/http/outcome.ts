/**
 * What the middleware's core hands an adapter for each request: pass it on with these headers, or answer it with this
 * status, headers and body.
 */
import type { LimiterDecision } from '../limiter/create-limiter.js';
import type { AfterResponse } from './count-by-response.js';
import type { HeaderList } from './headers.js';
import type { RateLimitInfo } from './rate-limit-info.js';
import type { RejectionInfo } from './rejection.js';
import type { TokenMeter } from './token-meter.js';

/** What to do with a request: pass it on (setting `headers`), or answer it with `status`, `headers`, `body`. */
export interface HttpOutcome {
  /** True: continue to the handler, after setting `headers` on the response. */
  readonly pass: boolean;
  /** Headers to set, on a pass as on a rejection: `[name1, value1, name2, value2, …]`. */
  readonly headers: HeaderList;
  /** Status of a rejection (429, 403, 503); 0 on a pass. */
  readonly status: number;
  /** Body of a rejection; `''` on a pass. */
  readonly body: string;
  /** Content type of the body; `''` on a pass. */
  readonly contentType: string;
  /** The facts of a rejection, for custom handlers. */
  readonly rejection: RejectionInfo | undefined;
  /** The limiter's decision, when the request was checked. */
  readonly decision: LimiterDecision | undefined;
  /** What to put on the request for the handler (`req.rateLimit`), when any limit applied. */
  readonly info: RateLimitInfo | undefined;
  /**
   * Counting by response (`skipSuccessfulRequests`, `responseCost`, …): the adapter calls it once the
   * response is sent, with its status (0 when the client went away first). Always present, undefined
   * when there is nothing to do, so every outcome has one shape (the adapters read them per request).
   */
  readonly afterResponse: AfterResponse | undefined;
  /**
   * With the `tokenBudget` option, on a pass: the adapter feeds it the response body as it is sent and
   * tells it when the response ended (only budget outcomes carry it; adapters read it only then).
   */
  readonly meter?: TokenMeter;
}

/** The outcome of a request no limit applies to (skipped, allow-listed, keyless) or in shadow mode. */
export const PASS: HttpOutcome = Object.freeze({
  pass: true,
  headers: Object.freeze([]) as HeaderList,
  status: 0,
  body: '',
  contentType: '',
  rejection: undefined,
  decision: undefined,
  info: undefined,
  afterResponse: undefined,
});
