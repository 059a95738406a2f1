/**
 * The overload benchmark's moving parts: an upstream with a fixed capacity (its own process), the
 * proxy in front of it (sluice's node:http middleware with `adaptive`, or none), and an open-loop
 * load of requests at a fixed rate, each recorded with its priority, outcome and latency.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { Agent, createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Callers } from './overload-callers.js';

/**
 * The upstream: `capacity` requests served at once, each `serviceMs` (a timer, not CPU), the rest
 * waiting in a FIFO queue with no bound, as a thread pool does. POST /factor?f=5 multiplies the
 * service time. Prints its port on stdout.
 */
const UPSTREAM = `
const http = require('node:http');
const capacity = Number(process.argv[1]); const baseMs = Number(process.argv[2]);
let factor = 1, busy = 0; const queue = [];
const next = () => { while (busy < capacity && queue.length > 0) { busy++; const res = queue.shift();
  setTimeout(() => { busy--; if (!res.destroyed) res.end('ok'); next(); }, baseMs * factor); } };
http.createServer((req, res) => {
  if (req.url.startsWith('/factor')) { factor = Number(new URL(req.url, 'http://x').searchParams.get('f')); return res.end(); }
  queue.push(res); next();
}).listen(0, '127.0.0.1', function () { console.log(this.address().port); });
`;

/** Starts the upstream process; answers its URL and a stop function. */
export async function startUpstream(
  capacity: number,
  serviceMs: number,
): Promise<{ url: string; stop(): void; child: ChildProcess }> {
  const child = spawn(process.execPath, ['-e', UPSTREAM, String(capacity), String(serviceMs)], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const port = await new Promise<string>((resolve, reject) => {
    child.stdout?.once('data', (d: Buffer) => resolve(d.toString().trim()));
    child.once('exit', (code) => reject(new Error(`upstream exited ${code}`)));
  });
  return { url: `http://127.0.0.1:${port}`, child, stop: () => child.kill() };
}

const upstreamAgent = new Agent({ keepAlive: true, maxSockets: Number.POSITIVE_INFINITY });

/** Sends one request and answers its status (0 for a network error or a timeout) and latency. */
export function send(
  url: string,
  headers: Record<string, string>,
  timeoutMs: number,
  agent?: Agent,
): Promise<{ status: number; ms: number }> {
  const start = performance.now();
  return new Promise((resolve) => {
    const req = request(url, { agent, headers, timeout: timeoutMs }, (res) => {
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode ?? 0, ms: performance.now() - start }));
      res.on('error', () => resolve({ status: 0, ms: performance.now() - start }));
    });
    req.on('timeout', () => req.destroy());
    req.on('error', () => resolve({ status: 0, ms: performance.now() - start }));
    req.end();
  });
}

/** A proxy to `upstream`: every request forwarded, or answered by `wrap` (sluice's middleware) first. */
export async function startProxy(
  upstream: string,
  wrap:
    | ((
        listener: (req: import('node:http').IncomingMessage, res: import('node:http').ServerResponse) => void,
      ) => (req: import('node:http').IncomingMessage, res: import('node:http').ServerResponse) => void)
    | undefined,
): Promise<{ url: string; server: Server }> {
  const forward = (req: import('node:http').IncomingMessage, res: import('node:http').ServerResponse) => {
    const out = request(`${upstream}${req.url}`, { agent: upstreamAgent }, (up) => {
      res.statusCode = up.statusCode ?? 502;
      up.pipe(res);
    });
    out.on('error', () => {
      if (!res.headersSent) res.statusCode = 502;
      res.end();
    });
    // The client gave up: so does the proxy (the upstream keeps the work it already queued).
    res.on('close', () => out.destroy());
    out.end();
  };
  const server = createServer(wrap === undefined ? forward : wrap(forward));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server };
}

/** One request of the load. */
export interface Sample {
  atMs: number;
  critical: boolean;
  status: number;
  ms: number;
}

/** A load: `ratePerS` requests a second to `url` for `durationMs`, a share `criticalShare` critical. */
export interface Load {
  url: string;
  ratePerS: number;
  durationMs: number;
  criticalShare: number;
  /** The client's patience per request. */
  timeoutMs: number;
}

/**
 * Offers the load (open loop: arrivals do not wait for answers), critical requests marked
 * `x-priority: critical`; `onTick` runs every 100 ms.
 */
export async function offerLoad(load: Load, onTick: (elapsedMs: number) => void): Promise<Sample[]> {
  const { url, ratePerS, durationMs, criticalShare, timeoutMs } = load;
  const agent = new Agent({ keepAlive: true, maxSockets: Number.POSITIVE_INFINITY });
  const samples: Promise<Sample>[] = [];
  const start = performance.now();
  let sent = 0;
  let lastTick = 0;
  await new Promise<void>((done) => {
    const timer = setInterval(() => {
      const elapsed = performance.now() - start;
      for (; sent < Math.min(ratePerS * (elapsed / 1000), (ratePerS * durationMs) / 1000); sent++) {
        const critical = sent % Math.round(1 / criticalShare) === 0;
        const atMs = performance.now() - start;
        samples.push(
          send(url, critical ? { 'x-priority': 'critical' } : {}, timeoutMs, agent).then((r) => ({
            atMs,
            critical,
            ...r,
          })),
        );
      }
      if (elapsed - lastTick >= 100) {
        lastTick = elapsed;
        onTick(elapsed);
      }
      if (elapsed >= durationMs) {
        clearInterval(timer);
        done();
      }
    }, 2);
  });
  const all = await Promise.all(samples);
  agent.destroy();
  return all;
}

/** The `q` quantile (0-1) of `values`. */
export function quantile(values: number[], q: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] as number;
}

/**
 * Runs {@link offerLoad} (or the closed-loop callers of overload-callers.ts) in a child process (bench/lib/overload-client beside this file), calling
 * `onTick` every 100 ms meanwhile; answers its samples.
 */
export async function offerLoadApart(load: Load | Callers, onTick: (elapsedMs: number) => void): Promise<Sample[]> {
  // Compiled by `npm run bench`, or run from source with tsx (node --import tsx bench/overload.ts).
  const fromSource = import.meta.url.endsWith('.ts');
  const script = new URL(fromSource ? './overload-client.ts' : './overload-client.js', import.meta.url).pathname;
  const loader = fromSource ? ['--import', 'tsx'] : [];
  const args = [...loader, script, JSON.stringify(load)];
  const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'inherit'] });
  const start = performance.now();
  const ticker = setInterval(() => onTick(performance.now() - start), 100);
  let out = '';
  child.stdout?.on('data', (d: Buffer) => {
    out += d.toString();
  });
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  clearInterval(ticker);
  if (code !== 0) throw new Error(`the load generator exited ${code}`);
  return (JSON.parse(out) as [number, number, number, number][]).map(([atMs, critical, status, ms]) => ({
    atMs,
    critical: critical === 1,
    status,
    ms,
  }));
}
