/**
 * The xDS config source (envoy ratelimit's CONFIG_TYPE=GRPC_XDS_SOTW): one Aggregated Discovery Service
 * stream to a management server, state of the world. Every DiscoveryResponse carries all the
 * RateLimitConfig resources; they are validated exactly as files are (each becomes a rule source for
 * `parseRules`), applied when valid and ACKed, or NACKed with the problems while the last good rules stay.
 * A dropped stream is reopened after `retryMs` (or the `backoff`), asking again with the last accepted version.
 */
import type { LoadResult } from 'sluice/rules';
import type { Logger } from '../../observability/logger.js';
import { type AdsStream, createAdsClient, type DiscoveryResponse, nodeOf, openAdsStream } from './ads-client.js';
import { backoffDelay } from './backoff.js';
import { RATE_LIMIT_CONFIG_TYPE_URL } from './rls-config.js';
import type { XdsOptions } from './xds-options.js';
import { loadResources, nackMessage, type RulesTarget } from './xds-resources.js';

/** Callbacks of {@link startXdsSource}: where valid rules go (`apply`), and word of every response. */
export interface XdsSourceCallbacks extends RulesTarget {
  /** Every response, good or bad (for metrics, logs and the config status). */
  report(result: LoadResult, version: string): void;
  logger: Logger;
}

/** A running xDS source. */
export interface XdsSource {
  /** Resolves once the first valid config was applied. */
  readonly firstConfig: Promise<void>;
  /** True once the first valid config was applied (the service is not ready before, unless forced to start). */
  readonly hasConfig: boolean;
  /** The version of the config in use ('' before the first). */
  readonly version: string;
  close(): void;
}

/** One source's state, shared by the parts below. */
interface Subscription {
  readonly options: XdsOptions;
  readonly callbacks: XdsSourceCallbacks;
  readonly node: ReturnType<typeof nodeOf>;
  readonly client: ReturnType<typeof createAdsClient>;
  /** The version of the rules in use, sent back in every request. */
  version: string;
  hasConfig: boolean;
  closed: boolean;
  /** Reconnections since the last accepted config (the backoff's step). */
  attempt: number;
  stream: AdsStream | undefined;
  retry: NodeJS.Timeout | undefined;
  resolveFirst: () => void;
}

/** Opens the ADS stream and keeps it open until `close()`. */
export function startXdsSource(options: XdsOptions, callbacks: XdsSourceCallbacks): XdsSource {
  const sub: Subscription = {
    options,
    callbacks,
    node: nodeOf(options),
    client: createAdsClient(options),
    version: '',
    hasConfig: false,
    closed: false,
    attempt: 0,
    stream: undefined,
    retry: undefined,
    resolveFirst: () => {},
  };
  const firstConfig = new Promise<void>((resolve) => {
    sub.resolveFirst = resolve;
  });
  openStream(sub);
  return {
    firstConfig,
    get hasConfig() {
      return sub.hasConfig;
    },
    get version() {
      return sub.version;
    },
    close() {
      sub.closed = true;
      if (sub.retry !== undefined) clearTimeout(sub.retry);
      sub.stream?.cancel();
      sub.stream = undefined;
      sub.client.close();
    },
  };
}

/** Opens a stream and asks for everything; a stream that ends is reopened after a wait. */
function openStream(sub: Subscription): void {
  if (sub.closed) return;
  const { logger } = sub.callbacks;
  const s = openAdsStream(sub.client, sub.options.headers);
  sub.stream = s;
  s.on('data', (response: DiscoveryResponse) => {
    try {
      onResponse(sub, response);
    } catch (error) {
      logger.error({ err: error }, 'xds: response handling failed');
    }
  });
  const again = (why: string) => {
    if (sub.stream !== s) return;
    sub.stream = undefined;
    if (sub.closed) return;
    const { backoff, retryMs, server } = sub.options;
    const waitMs = backoff === undefined ? (retryMs ?? 3000) : backoffDelay(backoff, sub.attempt++);
    logger.warn({ server, why, waitMs }, 'xds: stream to the management server ended; reconnecting');
    // Not unref'd: while no config has arrived, this timer may be the only thing the process waits on,
    // and an unref'd one let Node exit 0. close() clears it, so it never holds a shutdown.
    sub.retry = setTimeout(openStream, waitMs, sub);
  };
  s.on('error', (error: Error) => again(error.message));
  s.on('end', () => again('the server ended the stream'));
  // State of the world: the first request (and one after every reconnect) asks for everything.
  send(sub, { versionInfo: sub.version, responseNonce: '' });
}

/** A state of the world: applied and ACKed when valid, NACKed with its problems otherwise. */
function onResponse(sub: Subscription, response: DiscoveryResponse): void {
  const nonce = response.nonce ?? '';
  const offered = response.versionInfo ?? '';
  if (response.typeUrl !== RATE_LIMIT_CONFIG_TYPE_URL) {
    send(sub, {
      versionInfo: sub.version,
      responseNonce: nonce,
      errorDetail: { code: 3, message: `sluice subscribes to ${RATE_LIMIT_CONFIG_TYPE_URL} only` },
    });
    return;
  }
  const result = loadResources(response, sub.callbacks);
  sub.callbacks.report(result, offered);
  if (result.ok) {
    sub.version = offered;
    sub.attempt = 0;
    send(sub, { versionInfo: sub.version, responseNonce: nonce });
    sub.hasConfig = true;
    sub.resolveFirst();
  } else {
    // NACK: the version still in use, the nonce answered, and why (INVALID_ARGUMENT).
    const errorDetail = { code: 3, message: nackMessage(result) };
    send(sub, { versionInfo: sub.version, responseNonce: nonce, errorDetail });
  }
}

function send(sub: Subscription, message: Record<string, unknown>): void {
  sub.stream?.write({ node: sub.node, typeUrl: RATE_LIMIT_CONFIG_TYPE_URL, ...message });
}
