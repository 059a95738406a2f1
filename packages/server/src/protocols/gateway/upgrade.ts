/**
 * Websocket upgrades through the gateway: the upstream handshake, the tunnel, and refusals written on the raw socket.
 */
import { request as httpRequest, type IncomingMessage, type OutgoingHttpHeaders, STATUS_CODES } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type { Logger } from '../../observability/logger.js';
import type { ServiceMetrics } from '../../observability/metrics.js';

/** An answer the gateway writes itself. */
interface Answer {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/**
 * How long the connection of an upgrade answered without a switch (refused, or the upstream's own answer)
 * stays open after the answer for its client to read it and close, ms. @default 5000
 */
export const UPGRADE_ANSWER_LINGER_MS = 5_000;

/** Writes a complete HTTP/1.1 response on a raw socket and closes it (an upgrade request has no ServerResponse). */
export function rejectUpgrade(socket: Duplex, answer: Answer): void {
  if (socket.destroyed) return;
  const headers: Record<string, string | number> = {
    ...answer.headers,
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(answer.body),
    connection: 'close',
  };
  lingerAfterAnswer(socket);
  socket.end(`${head(answer.status, STATUS_CODES[answer.status] ?? '', headers)}${answer.body}`);
}

/**
 * Lets an upgrade's connection end once its answer is out. The HTTP server hands the socket over paused and
 * half-open (`allowHalfOpen`): unread, it never sees the client's FIN, so the connection stayed open for
 * good (and held up shutdown). What the client sends is read and dropped; past the linger it is cut.
 */
function lingerAfterAnswer(socket: Duplex): void {
  socket.resume();
  (socket as Duplex & { setTimeout?: (ms: number, cb: () => void) => void }).setTimeout?.(
    UPGRADE_ANSWER_LINGER_MS,
    () => socket.destroy(),
  );
}

function head(status: number, message: string, headers: Record<string, string | number | string[]>): string {
  let text = `HTTP/1.1 ${status} ${message}\r\n`;
  for (const [name, value] of Object.entries(headers)) {
    for (const one of Array.isArray(value) ? value : [value]) text += `${name}: ${one}\r\n`;
  }
  return `${text}\r\n`;
}

/** What {@link proxyUpgrade} needs. */
export interface UpgradeProxy {
  req: IncomingMessage;
  socket: Duplex;
  /** Bytes the client sent after its request headers (the first websocket frames, if any). */
  head: Buffer;
  upstream: URL;
  /** Path and query to request upstream. */
  path: string;
  /** End-to-end headers with the forwarding headers rebuilt; `Connection`/`Upgrade` are added here. */
  headers: OutgoingHttpHeaders;
  /** The rate-limit headers to add to the upstream's answer. */
  extra: Record<string, string>;
  /** Longest wait for the upstream's answer to the upgrade. */
  timeoutMs: number;
  /** Gives the client's in-flight slot back; called once, when both sides are closed. */
  release: () => void;
  metrics: ServiceMetrics;
  logger: Logger;
}

/**
 * Tunnels a websocket upgrade to the upstream: the upgrade request is sent on a connection of its
 * own, and when the upstream switches protocols the two sockets are joined byte for byte. When the upstream
 * answers without switching, that answer is relayed and the connection closed.
 */
export function proxyUpgrade(p: UpgradeProxy): void {
  const { req, socket, upstream } = p;
  const secure = upstream.protocol === 'https:';
  let released = false;
  const release = () => {
    if (released) return;
    released = true;
    p.release();
  };
  // Gone while the decision was pending: its 'close' has fired already, so give the slot back now.
  if (socket.destroyed) {
    release();
    return;
  }
  socket.once('close', release);
  const outgoing = (secure ? httpsRequest : httpRequest)({
    protocol: upstream.protocol,
    hostname: upstream.hostname.replace(/^\[|\]$/g, ''),
    port: upstream.port || (secure ? 443 : 80),
    method: req.method,
    path: p.path,
    headers: { ...p.headers, connection: 'Upgrade', upgrade: String(req.headers.upgrade ?? '') },
    // An upgraded connection is never given back to a pool.
    agent: false,
    timeout: p.timeoutMs,
  });
  outgoing.on('timeout', () => outgoing.destroy(new Error('upstream timed out')));
  outgoing.on('upgrade', (res, upstreamSocket, upstreamHead) => joinTunnel(p, res, upstreamSocket, upstreamHead));
  outgoing.on('response', (res) => relayAnswer(p, res));
  outgoing.on('error', (error) => {
    p.logger.warn({ err: error.message, upstream: upstream.origin }, 'upstream upgrade failed');
    p.metrics.gateway(502);
    rejectUpgrade(socket, {
      status: 502,
      headers: p.extra,
      body: JSON.stringify({
        error: { code: 'ERR_SLUICE_UPSTREAM_UNAVAILABLE', message: 'the upstream could not be reached' },
      }),
    });
  });
  outgoing.end();
}

/** The upstream switched protocols: its answer goes to the client, then the two sockets are joined byte for byte. */
function joinTunnel(p: UpgradeProxy, res: IncomingMessage, upstreamSocket: Socket, upstreamHead: Buffer): void {
  const { socket } = p;
  p.metrics.gateway(res.statusCode ?? 101);
  upstreamSocket.on('error', () => socket.destroy());
  socket.on('error', () => upstreamSocket.destroy());
  if (socket.destroyed) {
    upstreamSocket.destroy();
    return;
  }
  const headers = headersOfRaw(res.rawHeaders);
  Object.assign(headers, p.extra);
  socket.write(head(res.statusCode ?? 101, res.statusMessage ?? 'Switching Protocols', headers));
  if (upstreamHead.length > 0) socket.write(upstreamHead);
  if (p.head.length > 0) upstreamSocket.write(p.head);
  // A tunnel may stay quiet for long (websocket pings are the application's business).
  upstreamSocket.setTimeout(0);
  (socket as Duplex & { setTimeout?: (ms: number) => void }).setTimeout?.(0);
  upstreamSocket.pipe(socket).pipe(upstreamSocket);
  upstreamSocket.once('close', () => socket.destroy());
  socket.once('close', () => upstreamSocket.destroy());
  // Either side's EOF ends the tunnel, once the other side has been sent it (pipe() ends it): both
  // sockets are half-open, and a client gone with a FIN in front of an upstream that never closes its
  // half (or the other way round) held both connections — and the service's shutdown — for good.
  const closeBoth = () => {
    socket.destroy();
    upstreamSocket.destroy();
  };
  socket.once('end', () => whenFinished(upstreamSocket, closeBoth));
  upstreamSocket.once('end', () => whenFinished(socket, closeBoth));
}

/** The upstream's raw headers as a record, a repeated name's values in a list (in the order they came). */
function headersOfRaw(raw: readonly string[]): Record<string, string | string[]> {
  const headers: Record<string, string | string[]> = {};
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const name = raw[i] as string;
    const existing = headers[name];
    const value = raw[i + 1] as string;
    headers[name] = existing === undefined ? value : [...(Array.isArray(existing) ? existing : [existing]), value];
  }
  return headers;
}

/** The upstream did not switch protocols: its answer is relayed and the connection closed. */
function relayAnswer(p: UpgradeProxy, res: IncomingMessage): void {
  const { socket } = p;
  p.metrics.gateway(res.statusCode ?? 502);
  const headers: Record<string, string | string[]> = {};
  for (const [name, value] of Object.entries(res.headers)) {
    if (value !== undefined && name !== 'connection' && name !== 'transfer-encoding' && name !== 'keep-alive')
      headers[name] = value;
  }
  delete headers['content-length'];
  Object.assign(headers, p.extra, { connection: 'close' });
  socket.write(head(res.statusCode ?? 502, res.statusMessage ?? '', headers));
  lingerAfterAnswer(socket);
  res.pipe(socket);
  res.on('error', () => socket.destroy());
}

/** Runs `then` once `socket` has finished writing (at once if it has). */
function whenFinished(socket: Duplex, then: () => void): void {
  if (socket.writableFinished) then();
  else socket.once('finish', then);
}
