/**
 * For the gateway's `--adaptive` tests: `sluice serve --upstream … --adaptive aimd` in front of a holding upstream
 * (one that keeps every request until the test answers it), and a poll for a condition.
 */
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type SluiceProcess, startSluice, tempFile } from './helpers.js';

/** A running gateway and its holding upstream. */
export interface AdaptiveGateway {
  readonly sluice: SluiceProcess;
  /** The gateway's base URL. */
  readonly url: string;
  /** The rules file (rewrite it and POST /admin/reload to reload). */
  readonly config: ReturnType<typeof tempFile>;
  /** Responses the upstream holds, in arrival order. */
  readonly held: ServerResponse[];
  stop(): Promise<void>;
}

/** Starts an upstream that calls `arrive` and holds each request, and the gateway in front of it with `rules`. */
export async function startAdaptiveGateway(
  rules: string,
  arrive: (req: IncomingMessage) => void,
  env: Record<string, string> = {},
): Promise<AdaptiveGateway> {
  const held: ServerResponse[] = [];
  const upstream = createServer((req, res) => {
    req.resume();
    arrive(req);
    held.push(res);
  });
  await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
  const config = tempFile('adaptive.yaml', rules);
  const port = (upstream.address() as AddressInfo).port;
  const sluice = await startSluice(adaptiveGatewayArgs(config.path, port), env);
  return {
    sluice,
    url: `http://127.0.0.1:${sluice.proxy}`,
    config,
    held,
    async stop() {
      upstream.closeAllConnections();
      await new Promise((r) => upstream.close(r));
      await sluice.stop();
      config.remove();
    },
  };
}

/** `sluice serve` arguments: rules from `configPath` (not watched), `--adaptive aimd` in front of the upstream. */
export function adaptiveGatewayArgs(configPath: string, upstreamPort: number): string[] {
  return [
    '--config',
    configPath,
    '--no-watch',
    '--upstream',
    `http://127.0.0.1:${upstreamPort}`,
    // Many requests from one client (the test) at once: the adaptive limit, not the per-client cap, is tested.
    '--gateway-max-client-inflight',
    '10000',
    '--adaptive',
    'aimd',
  ];
}

/** Waits (a few ms between looks) until `done()`; fails after about 20 s, saying `what`. */
export async function until(done: () => boolean | Promise<boolean>, what: string | (() => string)): Promise<void> {
  for (let i = 0; !(await done()); i++) {
    if (i > 2000) assert.fail(`never: ${typeof what === 'string' ? what : what()}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}
