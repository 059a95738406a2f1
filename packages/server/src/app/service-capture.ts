/**
 * `--capture` in the service: the decider wrapped so that every decision of gRPC, `/json` and the gateway is
 * offered to the capture (sampled by key, queued, written off the request path), a hook for `/v1/check`'s
 * decisions, and its metrics registered.
 */
import type { Registry } from 'prom-client';
import type { Clock } from 'sluice';
import type { RulesEngine } from 'sluice/rules';
import type { Decided, Decider } from '../core/decide.js';
import { registerCaptureMetrics } from '../observability/capture/capture-metrics.js';
import { type CaptureOptions, DEFAULT_CAPTURE_MAX_BYTES } from '../observability/capture/capture-options.js';
import {
  type CaptureRecorder,
  type CheckDecisionInfo,
  createCaptureRecorder,
} from '../observability/capture/capture-recorder.js';
import { type CaptureWriter, createCaptureWriter } from '../observability/capture/capture-writer.js';
import type { DecisionSource } from '../observability/decision-events.js';
import type { Logger } from '../observability/logger.js';

/** What the service needs of a capture. */
export interface ServiceCapture {
  readonly decider: Decider;
  /** `/v1/check`'s hook: each committed check decided by its policy (sampled by key inside). */
  readonly check: (info: CheckDecisionInfo) => void;
  readonly writer: CaptureWriter;
  close(): Promise<void>;
}

type Request = Parameters<Decider['decide']>[0];

/** The decider with the answer to each sampled request offered to `recorder`, at the time the decision began. */
function wrap(decider: Decider, recorder: CaptureRecorder, engine: RulesEngine, clock: Clock): Decider {
  const seen = (request: Request, source: DecisionSource, at: number, decided: Decided) => {
    recorder.record(request, decided, source, at, engine.ruleSet);
    return decided;
  };
  const inner = decider.decideNow?.bind(decider);
  return {
    decide(request, source, carrier) {
      if (!recorder.sampled(request)) return decider.decide(request, source, carrier);
      const at = clock.now();
      return decider.decide(request, source, carrier).then((decided) => seen(request, source, at, decided));
    },
    ...(inner === undefined
      ? {}
      : {
          decideNow(request, source, carrier) {
            // Out of the sample (most requests): the decision as it is, nothing else done.
            if (!recorder.sampled(request)) return inner(request, source, carrier);
            const at = clock.now();
            const decided = inner(request, source, carrier);
            return decided instanceof Promise
              ? decided.then((d) => seen(request, source, at, d))
              : seen(request, source, at, decided);
          },
        }),
  };
}

/** Starts capturing the decisions of `decider` into `options.dir`. */
export function startServiceCapture(
  options: CaptureOptions,
  parts: { decider: Decider; engine: RulesEngine; clock: Clock; registry: Registry; logger: Logger },
): ServiceCapture {
  let failures = 0;
  const writer = createCaptureWriter({
    dir: options.dir,
    maxBytes: options.maxBytes ?? DEFAULT_CAPTURE_MAX_BYTES,
    onError(error) {
      // One line per hundred failures: a full disk must not flood the log.
      if (failures++ % 100 === 0) parts.logger.warn({ err: error, failures }, 'capture: records dropped');
    },
  });
  registerCaptureMetrics(parts.registry, () => writer.stats());
  const recorder = createCaptureRecorder(options, (line) => writer.push(line));
  return {
    decider: wrap(parts.decider, recorder, parts.engine, parts.clock),
    check: (info) => recorder.recordCheck(info, parts.engine.ruleSet),
    writer,
    close: () => writer.close(),
  };
}
