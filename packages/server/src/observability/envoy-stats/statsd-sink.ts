/**
 * Sends envoy ratelimit's stats over UDP in statsd's text form (`name:value|c`, `|ms`), batched into
 * datagrams of at most 1432 bytes (gostats' UDP buffer) every flush interval. A send never blocks or fails
 * a decision: when statsd cannot be resolved or reached, the lines are dropped and counted.
 */
import { createSocket, type Socket } from 'node:dgram';
import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import type { EnvoyStats } from './envoy-stats.js';
import { RESPONSE_TIME_NAME } from './envoy-stats.js';

/** gostats' UDP buffer: one datagram stays under a 1500-byte MTU. */
export const MAX_DATAGRAM_BYTES = 1432;

/** Where and how often to send. */
export interface StatsdOptions {
  host: string;
  port: number;
  /** envoy's STATS_FLUSH_INTERVAL. @default 10_000 */
  flushIntervalMs?: number;
  /** gostats' `.__k=v` suffix of every name (EXTRA_TAGS). @default '' */
  tagSuffix?: string;
}

/** A running sender. */
export interface StatsdSink {
  /** Sends what was counted since the last flush (the timer does this every interval). */
  flush(): Promise<void>;
  /** Stops the timer, sends one last time and closes the socket. */
  close(): Promise<void>;
}

/** The statsd lines of the counters' deltas (zero deltas skipped, as gostats does) and the timer samples. */
export function drainLines(stats: EnvoyStats, tagSuffix: string): string[] {
  const lines: string[] = [];
  for (const c of stats.counters()) {
    if (c.pending === 0) continue;
    lines.push(`${c.name}${tagSuffix}:${c.pending}|c`);
    c.pending = 0;
  }
  for (const ms of stats.takeSamples()) lines.push(`${RESPONSE_TIME_NAME}${tagSuffix}:${ms}|ms`);
  return lines;
}

/** Lines packed into datagrams of at most `max` bytes, newline-separated (a longer line goes alone). */
export function packDatagrams(lines: readonly string[], max = MAX_DATAGRAM_BYTES): Buffer[] {
  const out: Buffer[] = [];
  let batch = '';
  for (const line of lines) {
    if (batch !== '' && Buffer.byteLength(batch) + 1 + Buffer.byteLength(line) > max) {
      out.push(Buffer.from(batch));
      batch = '';
    }
    batch = batch === '' ? line : `${batch}\n${line}`;
  }
  if (batch !== '') out.push(Buffer.from(batch));
  return out;
}

/** Starts sending `stats` to statsd every flush interval. */
export function startStatsdSink(stats: EnvoyStats, options: StatsdOptions): StatsdSink {
  const tags = options.tagSuffix ?? '';
  let sockets: { udp4?: Socket; udp6?: Socket } = {};
  const socketFor = (family: 4 | 6): Socket => {
    const type = family === 4 ? 'udp4' : 'udp6';
    let socket = sockets[type];
    if (socket === undefined) {
      socket = createSocket(type);
      // An ICMP "port unreachable" surfaces here on some systems: count it, never throw.
      socket.on('error', () => {
        stats.dropped++;
      });
      socket.unref();
      sockets = { ...sockets, [type]: socket };
    }
    return socket;
  };
  let flushing: Promise<void> | undefined;
  const send = async (): Promise<void> => {
    const lines = drainLines(stats, tags);
    if (lines.length === 0) return;
    let address: { address: string; family: number };
    try {
      const family = isIP(options.host);
      address = family === 0 ? await lookup(options.host) : { address: options.host, family };
    } catch {
      stats.dropped += lines.length;
      return;
    }
    const socket = socketFor(address.family === 6 ? 6 : 4);
    const sent = packDatagrams(lines).map(
      (datagram) =>
        new Promise<void>((resolve) => {
          try {
            socket.send(datagram, options.port, address.address, (error) => {
              if (error) stats.dropped += countLines(datagram);
              resolve();
            });
          } catch {
            stats.dropped += countLines(datagram);
            resolve();
          }
        }),
    );
    await Promise.all(sent);
  };
  const flush = (): Promise<void> => {
    // One flush at a time: a slow DNS answer must not pile lookups up (the counters keep counting).
    flushing ??= send().finally(() => {
      flushing = undefined;
    });
    return flushing;
  };
  const timer = setInterval(() => void flush(), options.flushIntervalMs ?? 10_000);
  timer.unref();
  return {
    flush,
    async close() {
      clearInterval(timer);
      await flush();
      for (const socket of Object.values(sockets)) socket.close();
      sockets = {};
    },
  };
}

function countLines(datagram: Buffer): number {
  let n = 1;
  for (const byte of datagram) if (byte === 10) n++;
  return n;
}
