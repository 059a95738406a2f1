/** Limiter decisions as OpenTelemetry metrics and span events, through `@opentelemetry/api` when the application registered an SDK. */
import { isSluiceError } from '../core/errors.js';
import { type DecisionMessage, decisionChannel } from './decision-channel.js';

/** The counter every check adds one to (ASP.NET Core's `aspnetcore.rate_limiting.requests`, sluice's prefix). */
export const REQUESTS_METRIC = 'sluice.rate_limiting.requests';
/** The event added to the active span, when it is recording, for each check. */
export const DECISION_EVENT = 'sluice.rate_limiting.decision';

type Attributes = Record<string, string | boolean>;

/** The parts of `@opentelemetry/api` sluice uses (a structural type: the library does not depend on the package). */
export interface OtelApi {
  metrics: { getMeterProvider(): MeterProvider };
  trace: {
    getActiveSpan(): { isRecording(): boolean; addEvent(name: string, attributes: Attributes): unknown } | undefined;
  };
}
interface MeterProvider {
  getMeter(name: string): {
    createCounter(
      name: string,
      options: { description: string; unit: string },
    ): { add(value: number, attributes: Attributes): void };
  };
}

/**
 * Where `@opentelemetry/api` keeps what an SDK registers (its `registerGlobal`, shared by every copy of the
 * API of major version 1). Reading it tells whether an SDK is there without loading the API.
 */
const OTEL_GLOBAL = Symbol.for('opentelemetry.js.api.1');
/** A variable, so that bundlers (Workers, Deno, Bun builds) leave the import alone when the API is absent. */
const OTEL_API = '@opentelemetry/api';

let connection: Promise<boolean> | undefined;
let subscribed = false;

/**
 * Records every limiter's decisions through the `@opentelemetry/api` module given, now: the explicit form
 * of what sluice does by itself once an SDK is registered (that loads the API asynchronously, so checks in
 * the first moments may pass unrecorded). Calling it again does nothing.
 * @example
 * import * as api from '@opentelemetry/api';
 * import { observeWithOpenTelemetry } from 'sluice';
 * observeWithOpenTelemetry(api); // after the SDK is set up
 */
export function observeWithOpenTelemetry(api: OtelApi): void {
  if (subscribed) return;
  subscribed = true;
  connection = Promise.resolve(true);
  decisionChannel.subscribe(recorder(api));
}

/**
 * Connects decisions to OpenTelemetry once an SDK has registered a meter or tracer provider: loads the API
 * (lazily; absent, nothing happens) and subscribes to `sluice:decision`. Every `createLimiter` calls it,
 * so without an SDK it costs one global read per limiter made, and nothing per decision.
 * @returns whether decisions are recorded, once the API has loaded; undefined while no SDK is registered
 */
export function connectOpenTelemetry(): Promise<boolean> | undefined {
  if (connection !== undefined) return connection;
  const registered = (globalThis as Record<symbol, { metrics?: unknown; trace?: unknown } | undefined>)[OTEL_GLOBAL];
  if (registered?.metrics === undefined && registered?.trace === undefined) return undefined;
  connection = (import(OTEL_API) as Promise<OtelApi & { default?: OtelApi }>).then(
    (api) => {
      observeWithOpenTelemetry(api.metrics === undefined && api.default !== undefined ? api.default : api);
      return true;
    },
    () => false,
  );
  return connection;
}

/** The channel subscriber: one count per check, and an event on the request's span when it records. */
function recorder(api: OtelApi): (message: unknown) => void {
  let provider: MeterProvider | undefined;
  let requests: { add(value: number, attributes: Attributes): void } | undefined;
  // The few attribute sets a process uses (limiter × result × binding limit), made once each.
  const attributeSets = new Map<string, Attributes>();
  return (message) => {
    const m = message as DecisionMessage;
    // A provider registered after the first check replaces the no-op meter the API handed out before it.
    const current = api.metrics.getMeterProvider();
    if (current !== provider || requests === undefined) {
      provider = current;
      requests = current.getMeter('sluice').createCounter(REQUESTS_METRIC, {
        description: 'Checks decided by sluice limiters, by policy and result',
        unit: '{request}',
      });
    }
    const attributes = attributesOf(m, attributeSets);
    requests.add(1, attributes);
    const span = api.trace.getActiveSpan();
    if (span?.isRecording()) span.addEvent(DECISION_EVENT, attributes);
  };
}

/** The low-cardinality attributes of one check: never the key. */
function attributesOf(m: DecisionMessage, cache: Map<string, Attributes>): Attributes {
  const policy = m.name ?? m.limits.join(',');
  const d = m.decision;
  const result = d === undefined ? 'error' : d.allowed ? 'acquired' : 'rejected';
  const limit = d !== undefined && !d.allowed ? bindingLimit(m) : undefined;
  const errorType = d === undefined ? (isSluiceError(m.error) ? m.error.code : 'error') : undefined;
  const degraded = d?.degraded === true;
  const id = `${policy}\u0000${result}\u0000${limit ?? ''}\u0000${errorType ?? ''}\u0000${degraded}`;
  let attributes = cache.get(id);
  if (attributes === undefined) {
    attributes = { 'sluice.rate_limiting.policy': policy, 'sluice.rate_limiting.result': result };
    if (limit !== undefined) attributes['sluice.rate_limiting.limit'] = limit;
    if (errorType !== undefined) attributes['error.type'] = errorType;
    if (degraded) attributes['sluice.rate_limiting.degraded'] = true;
    // Bounded all the same: a process that somehow makes endless limiter names stops caching, not counting.
    if (cache.size < 1000) cache.set(id, attributes);
  }
  return attributes;
}

/** The first limit that rejected (a multi-limit check), or the only one. */
function bindingLimit(m: DecisionMessage): string | undefined {
  const results = m.decision?.results;
  if (results === undefined) return m.limits[0];
  for (const r of results) if (!r.decision.allowed) return r.name;
  return undefined;
}
