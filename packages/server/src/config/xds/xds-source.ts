/**
 * The xDS config source (envoy ratelimit's CONFIG_TYPE=GRPC_XDS_SOTW): one Aggregated Discovery Service
 * stream to a management server, state of the world. Every DiscoveryResponse carries all the
 * RateLimitConfig resources; they are validated exactly as files are (each becomes a rule source for
 * `parseRules`), applied when valid and ACKed, or NACKed with the problems while the last good rules stay.
 * A dropped stream is reopened after `retryMs` (or the `backoff`), asking again with the last accepted version.
 */
import { readFileSync } from 'node:fs';
import { Client, type ClientDuplexStream, credentials, Metadata } from '@grpc/grpc-js';
import type { LoadResult, RuleSet } from 'sluice/rules';
import { parseRules } from 'sluice/rules';
import type { Logger } from '../../observability/logger.js';
import { backoffDelay } from './backoff.js';
import { decodeRateLimitConfig, RATE_LIMIT_CONFIG_TYPE_URL, ruleSourceOf, xdsProtoRoot } from './rls-config.js';
import type { XdsOptions } from './xds-options.js';

const ADS_METHOD = '/envoy.service.discovery.v3.AggregatedDiscoveryService/StreamAggregatedResources';

/** Callbacks of {@link startXdsSource}. */
export interface XdsSourceCallbacks {
  /** A valid state of the world arrived: apply it. */
  apply(ruleSet: RuleSet): void;
  /** Every response, good or bad (for metrics, logs and the config status). */
  report(result: LoadResult, version: string): void;
  logger: Logger;
  /** Merge resources of one domain (MERGE_DOMAIN_CONFIG). */
  mergeDomains: boolean;
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

/** google.protobuf.Any as protobufjs decodes it (its built-in definition keeps the snake_case name). */
interface AnyMessage {
  type_url?: string;
  typeUrl?: string;
  value?: Uint8Array;
}

interface DiscoveryResponse {
  versionInfo?: string;
  resources?: AnyMessage[];
  typeUrl?: string;
  nonce?: string;
}

/** Opens the ADS stream and keeps it open until `close()`. */
export function startXdsSource(options: XdsOptions, callbacks: XdsSourceCallbacks): XdsSource {
  const { logger } = callbacks;
  const retryMs = options.retryMs ?? 3000;
  let attempt = 0;
  const nextWait = () => (options.backoff === undefined ? retryMs : backoffDelay(options.backoff, attempt++));
  const node = nodeOf(options);
  const client = createAdsClient(options);
  let version = '';
  let hasConfig = false;
  let closed = false;
  let stream: ClientDuplexStream<Record<string, unknown>, DiscoveryResponse> | undefined;
  let retry: NodeJS.Timeout | undefined;
  let resolveFirst: () => void = () => {};
  const firstConfig = new Promise<void>((resolve) => {
    resolveFirst = resolve;
  });

  function send(message: Record<string, unknown>): void {
    stream?.write({ node, typeUrl: RATE_LIMIT_CONFIG_TYPE_URL, ...message });
  }

  function onResponse(response: DiscoveryResponse): void {
    const nonce = response.nonce ?? '';
    const offered = response.versionInfo ?? '';
    if (response.typeUrl !== RATE_LIMIT_CONFIG_TYPE_URL) {
      send({
        versionInfo: version,
        responseNonce: nonce,
        errorDetail: { code: 3, message: `sluice subscribes to ${RATE_LIMIT_CONFIG_TYPE_URL} only` },
      });
      return;
    }
    const result = loadResources(response, callbacks);
    callbacks.report(result, offered);
    if (result.ok) {
      version = offered;
      attempt = 0;
      send({ versionInfo: version, responseNonce: nonce });
      hasConfig = true;
      resolveFirst();
    } else {
      // NACK: the version still in use, the nonce answered, and why (INVALID_ARGUMENT).
      send({ versionInfo: version, responseNonce: nonce, errorDetail: { code: 3, message: nackMessage(result) } });
    }
  }

  function open(): void {
    if (closed) return;
    const s = openAdsStream(client, options.headers);
    stream = s;
    s.on('data', (response: DiscoveryResponse) => {
      try {
        onResponse(response);
      } catch (error) {
        logger.error({ err: error }, 'xds: response handling failed');
      }
    });
    const again = (why: string) => {
      if (stream !== s) return;
      stream = undefined;
      if (closed) return;
      const waitMs = nextWait();
      logger.warn({ server: options.server, why, waitMs }, 'xds: stream to the management server ended; reconnecting');
      // Not unref'd: while no config has arrived, this timer may be the only thing the process waits on,
      // and an unref'd one let Node exit 0. close() clears it, so it never holds a shutdown.
      retry = setTimeout(open, waitMs);
    };
    s.on('error', (error: Error) => again(error.message));
    s.on('end', () => again('the server ended the stream'));
    // State of the world: the first request (and one after every reconnect) asks for everything.
    send({ versionInfo: version, responseNonce: '' });
  }

  open();
  return {
    firstConfig,
    get hasConfig() {
      return hasConfig;
    },
    get version() {
      return version;
    },
    close() {
      closed = true;
      if (retry !== undefined) clearTimeout(retry);
      stream?.cancel();
      stream = undefined;
      client.close();
    },
  };
}

/** The node sluice introduces itself as on the ADS stream. */
function nodeOf(options: XdsOptions) {
  return {
    id: options.nodeId,
    userAgentName: 'sluice',
    metadata: {
      fields: Object.fromEntries(Object.entries(options.nodeMetadata ?? {}).map(([k, v]) => [k, { stringValue: v }])),
    },
  };
}

/** Opens one ADS stream (DiscoveryRequest / DiscoveryResponse, coded by protobufjs) with the configured headers. */
function openAdsStream(
  client: ReturnType<typeof createAdsClient>,
  headers: XdsOptions['headers'],
): ClientDuplexStream<Record<string, unknown>, DiscoveryResponse> {
  const root = xdsProtoRoot();
  const Request = root.lookupType('envoy.service.discovery.v3.DiscoveryRequest');
  const Response = root.lookupType('envoy.service.discovery.v3.DiscoveryResponse');
  const metadata = new Metadata();
  for (const [k, v] of Object.entries(headers ?? {})) metadata.set(k, v);
  return client.makeBidiStreamRequest(
    ADS_METHOD,
    (message: Record<string, unknown>) => Buffer.from(Request.encode(Request.fromObject(message)).finish()),
    (bytes: Buffer) =>
      Response.toObject(Response.decode(bytes), { defaults: false, bytes: Buffer }) as DiscoveryResponse,
    metadata,
  );
}

/** Why a config was refused, for the NACK's error detail (bounded). */
function nackMessage(result: LoadResult & { ok: false }): string {
  const why = result.issues.map((i) => `${i.file}:${i.line}:${i.column} ${i.code} ${i.message}`).join('\n');
  return why.slice(0, 16_384);
}

/** The rules a response carries, parsed and applied; a failed load (bad resources, a throwing apply) as issues. */
function loadResources(response: DiscoveryResponse, callbacks: XdsSourceCallbacks): LoadResult {
  let result: LoadResult;
  try {
    const sources = (response.resources ?? []).map((any, i) => {
      const typeUrl = any.type_url ?? any.typeUrl;
      if (typeUrl !== RATE_LIMIT_CONFIG_TYPE_URL) {
        throw new Error(`resource ${i} is a ${typeUrl ?? 'resource with no type'}, not a RateLimitConfig`);
      }
      return ruleSourceOf(decodeRateLimitConfig(any.value ?? new Uint8Array()), i);
    });
    result = parseRules(sources, { mergeDomains: callbacks.mergeDomains });
  } catch (error) {
    result = {
      ok: false,
      issues: [
        {
          code: 'ERR_SLUICE_RULES_LOAD_FAILED',
          message: `xds: ${(error as Error).message}`,
          file: 'xds',
          line: 0,
          column: 0,
        },
      ],
      files: [],
    };
  }
  if (result.ok) {
    try {
      callbacks.apply(result.ruleSet);
    } catch (error) {
      result = {
        ok: false,
        issues: [{ code: 'ERR_SLUICE_RULES_LOAD_FAILED', message: String(error), file: 'xds', line: 0, column: 0 }],
        files: [],
      };
    }
  }
  return result;
}

/** The gRPC client of the management server (TLS, keepalive, the message bound). */
function createAdsClient(options: XdsOptions): Client {
  return new Client(options.server, channelCredentials(options), {
    'grpc.max_receive_message_length': options.maxMessageBytes ?? 4 * 1024 * 1024,
    // A management server that vanished without closing the connection is noticed, and the stream reopened.
    'grpc.keepalive_time_ms': 30_000,
    'grpc.keepalive_timeout_ms': 10_000,
    ...(options.tls?.serverName === undefined ? {} : { 'grpc.ssl_target_name_override': options.tls.serverName }),
  });
}

function channelCredentials(options: XdsOptions) {
  const tls = options.tls;
  if (tls === undefined) return credentials.createInsecure();
  const read = (f: string | undefined) => (f === undefined ? null : readFileSync(f));
  const creds = credentials.createSsl(read(tls.caFile), read(tls.keyFile), read(tls.certFile));
  return creds;
}
