/**
 * `sluice serve --upstream … --adaptive ALG` against a real upstream that slows down: the gateway sheds
 * with 503 and Retry-After before the upstream's queue explodes, and without --adaptive it does not.
 */
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { type SluiceProcess, startSluice, tempFile } from './helpers.js';

// One generous limit for everybody: the rules let the burst through, the adaptive limit has to shed it.
const RULES = `domain: overload
http:
  rate_limits:
    - actions: [{ generic_key: { descriptor_value: everyone } }]
descriptors:
  - { key: generic_key, value: everyone, rate_limit: { unit: day, requests_per_unit: 1000000 } }
`;

/** An upstream serving 4 requests at once, `serviceMs` each, the rest queued; it counts its peak queue. */
function startUpstream() {
  const state = { serviceMs: 20, busy: 0, waiting: 0, peakWaiting: 0 };
  const queue: (() => void)[] = [];
  const next = () => {
    while (state.busy < 4 && queue.length > 0) {
      state.busy++;
      state.waiting--;
      (queue.shift() as () => void)();
    }
  };
  const server = createServer((req, res) => {
    req.resume();
    state.waiting++;
    state.peakWaiting = Math.max(state.peakWaiting, state.waiting);
    queue.push(() =>
      setTimeout(() => {
        state.busy--;
        res.end('ok');
        next();
      }, state.serviceMs),
    );
    next();
  });
  return { server, state };
}

/** Sends `n` requests at once through the gateway; answers their statuses and one 503's Retry-After. */
async function burst(gateway: string, n: number): Promise<{ statuses: number[]; retryAfter: string | null }> {
  let retryAfter: string | null = null;
  const statuses = await Promise.all(
    Array.from({ length: n }, async () => {
      const res = await fetch(`${gateway}/`);
      await res.arrayBuffer();
      if (res.status === 503) retryAfter = res.headers.get('retry-after');
      return res.status;
    }),
  );
  return { statuses, retryAfter };
}

for (const adaptive of [undefined, 'vegas', 'gradient2'] as const) {
  describe(
    `gateway ${adaptive === undefined ? 'without --adaptive' : `--adaptive ${adaptive}`}`,
    { timeout: 60_000 },
    () => {
      let upstream: ReturnType<typeof startUpstream>;
      let sluice: SluiceProcess;
      let config: ReturnType<typeof tempFile>;
      let gateway: string;
      before(async () => {
        upstream = startUpstream();
        await new Promise<void>((r) => (upstream.server as Server).listen(0, '127.0.0.1', r));
        config = tempFile('overload.yaml', RULES);
        const port = (upstream.server.address() as AddressInfo).port;
        sluice = await startSluice([
          '--config',
          config.path,
          '--upstream',
          `http://127.0.0.1:${port}`,
          '--gateway-max-client-inflight',
          '1000',
          ...(adaptive === undefined ? [] : ['--adaptive', adaptive]),
        ]);
        gateway = `http://127.0.0.1:${sluice.proxy}`;
      });
      after(async () => {
        upstream?.server.closeAllConnections();
        await new Promise((r) => upstream?.server.close(r));
        await sluice?.stop();
        config?.remove();
      });

      it('a burst against a slowed upstream: shed with 503 before its queue explodes (or not, without)', async () => {
        // Warm up at the normal speed, then the upstream becomes 5× slower and 300 requests arrive at once.
        // (A loaded machine may slow the warm-up enough for the limit to shed some of it: counted too.)
        let warmShed = 0;
        for (let i = 0; i < 5; i++) warmShed += (await burst(gateway, 20)).statuses.filter((s) => s === 503).length;
        upstream.state.serviceMs = 100;
        upstream.state.peakWaiting = 0;
        const { statuses, retryAfter } = await burst(gateway, 300);
        const ok = statuses.filter((s) => s === 200).length;
        const shed = statuses.filter((s) => s === 503).length;
        if (adaptive === undefined) {
          // Everything goes to the upstream: its queue takes the whole burst (past the gateway's
          // upstream sockets, the rest fail with 502).
          assert.equal(shed, 0);
          assert.ok(upstream.state.peakWaiting >= 200, `peak queue ${upstream.state.peakWaiting}`);
        } else {
          assert.equal(ok + shed, 300, `only 200s and 503s: ${[...new Set(statuses)]}`);
          assert.ok(shed >= 200, `${shed} shed`);
          assert.equal(retryAfter, '1');
          // At most the adaptive limit reaches the upstream: its queue stays short.
          assert.ok(upstream.state.peakWaiting <= 60, `peak queue ${upstream.state.peakWaiting}`);
          // The metrics show the limit, what is in flight and the shed requests, apart from 429s.
          let metrics = '';
          // Summed over the priorities' lines (a request no http.priorities route names is batch).
          const value = (name: string) =>
            [...metrics.matchAll(new RegExp(`^${name}\\{[^}]*\\} (\\S+)$`, 'gm'))].reduce(
              (t, m) => t + Number(m[1]),
              0,
            );
          // A place comes back on the response's 'close', which may follow the last byte by a moment.
          for (let i = 0; i < 50 && (metrics === '' || value('sluice_adaptive_in_flight') !== 0); i++) {
            if (i > 0) await new Promise((r) => setTimeout(r, 20));
            metrics = await (await fetch(`http://127.0.0.1:${sluice.http}/metrics`)).text();
          }
          assert.equal(value('sluice_adaptive_shed_total'), shed + warmShed);
          assert.ok(value('sluice_adaptive_limit') >= 1);
          assert.equal(value('sluice_adaptive_in_flight'), 0);
        }
      });
    },
  );
}
