/**
 * envoy ratelimit's own metrics from the real `sluice serve` in envoy mode, configured by its environment
 * variables: statsd lines caught by a UDP receiver in the test (names, types and values after real gRPC
 * ShouldRateLimit calls, checked against upstream's list in upstream-stats.json), its Prometheus names
 * scraped from PROMETHEUS_ADDR, and a statsd that cannot be resolved or reached leaving decisions alone.
 */
import assert from 'node:assert/strict';
import { createSocket, type Socket } from 'node:dgram';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { describe, it } from 'node:test';
import { createRuntime, type EnvoyService, startEnvoy } from './harness.js';

const UPSTREAM = JSON.parse(readFileSync(new URL('./upstream-stats.json', import.meta.url), 'utf8')) as {
  statsd: { name: string; type: string }[];
  prometheus: { name: string; type: string }[];
};

const RULES = {
  'api.yaml': `domain: api
descriptors:
  - key: k
    rate_limit: { unit: hour, requests_per_unit: 4 }
  - key: s
    shadow_mode: true
    rate_limit: { unit: hour, requests_per_unit: 1 }
  - key: h
    rate_limit: { unit: hour, requests_per_unit: 10 }
  - key: user
    detailed_metric: true
    rate_limit: { unit: hour, requests_per_unit: 10 }
`,
};

/** A statsd receiver: every line it got, and a wait for a condition on them. */
interface Receiver {
  readonly port: number;
  readonly lines: string[];
  until(done: (lines: readonly string[]) => boolean): Promise<void>;
  close(): void;
}

async function statsdReceiver(): Promise<Receiver> {
  const socket: Socket = createSocket('udp4');
  const lines: string[] = [];
  let waiting: (() => void) | undefined;
  socket.on('message', (datagram) => {
    lines.push(...datagram.toString('utf8').split('\n'));
    waiting?.();
  });
  await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
  return {
    port: socket.address().port,
    lines,
    until: (done) =>
      new Promise((resolve) => {
        const check = () => {
          if (!done(lines)) return;
          waiting = undefined;
          resolve();
        };
        waiting = check;
        check();
      }),
    close: () => socket.close(),
  };
}

/** Counter totals (`name:n|c` summed over flushes) and the timer samples, by name. */
function tally(lines: readonly string[]): { counters: Map<string, number>; timers: Map<string, number[]> } {
  const counters = new Map<string, number>();
  const timers = new Map<string, number[]>();
  for (const line of lines) {
    const m = /^(.+):(\d+(?:\.\d+)?)\|(c|ms)$/.exec(line);
    assert.ok(m, `not a statsd line: ${JSON.stringify(line)}`);
    const [, name, value, type] = m as unknown as [string, string, string, string];
    if (type === 'c') counters.set(name, (counters.get(name) ?? 0) + Number(value));
    else timers.set(name, [...(timers.get(name) ?? []), Number(value)]);
  }
  return { counters, timers };
}

/** True when `name` is one of upstream's statsd names (`<key>` and `<domain>` standing for any key). */
function upstreamStatsd(name: string, type: string): boolean {
  return UPSTREAM.statsd.some((u) => {
    if (u.type !== type) return false;
    const pattern = u.name.replace(/[.]/g, '\\.').replace('<key>', '.+').replace('<domain>', '[^.]+');
    return new RegExp(`^${pattern}$`).test(name);
  });
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** The calls every case makes: 5 on a limit of 4, 2 on a shadow limit of 1, hits_addend 3, an unknown domain. */
async function traffic(svc: EnvoyService): Promise<string[]> {
  const codes: string[] = [];
  for (let i = 0; i < 5; i++) codes.push((await svc.ask('api', [[['k', 'v']]])).overallCode ?? '');
  for (let i = 0; i < 2; i++) codes.push((await svc.ask('api', [[['s', 'x']]])).overallCode ?? '');
  codes.push((await svc.ask('api', [[['h', 'y']]], { hitsAddend: 3 })).overallCode ?? '');
  codes.push((await svc.ask('nope', [[['k', 'v']]])).overallCode ?? '');
  return codes;
}
const CODES = ['OK', 'OK', 'OK', 'OK', 'OVER_LIMIT', 'OK', 'OK', 'OK', 'OK'];
const CALLS = CODES.length;

describe('envoy ratelimit metrics in envoy mode', () => {
  it('USE_STATSD (the default): envoy’s names, types and values over UDP, with EXTRA_TAGS', async () => {
    const receiver = await statsdReceiver();
    const runtime = createRuntime(RULES);
    const svc = await startEnvoy({
      ...runtime.env,
      STATSD_HOST: '127.0.0.1',
      STATSD_PORT: String(receiver.port),
      STATS_FLUSH_INTERVAL: '100ms',
      EXTRA_TAGS: 'env:prod',
    });
    try {
      assert.deepEqual(await traffic(svc), CODES);
      const requests = 'ratelimit_server.ShouldRateLimit.total_requests.__env=prod';
      await receiver.until((lines) => {
        const { counters, timers } = tally(lines);
        return (
          counters.get(requests) === CALLS &&
          timers.get('ratelimit_server.ShouldRateLimit.response_time.__env=prod')?.length === CALLS
        );
      });
      const { counters, timers } = tally(receiver.lines);
      const c = (name: string) => counters.get(`${name}.__env=prod`) ?? 0;
      // 5 hits on a limit of 4: 4 within (the 4th past floor(4 × 0.8) = 3, so near), 1 over.
      assert.equal(c('ratelimit.service.rate_limit.api.k.total_hits'), 5);
      assert.equal(c('ratelimit.service.rate_limit.api.k.within_limit'), 4);
      assert.equal(c('ratelimit.service.rate_limit.api.k.near_limit'), 1);
      assert.equal(c('ratelimit.service.rate_limit.api.k.over_limit'), 1);
      // shadow_mode: the second is over its limit of 1 but passes; envoy counts it over_limit and shadow_mode.
      assert.equal(c('ratelimit.service.rate_limit.api.s.total_hits'), 2);
      assert.equal(c('ratelimit.service.rate_limit.api.s.over_limit'), 1);
      assert.equal(c('ratelimit.service.rate_limit.api.s.shadow_mode'), 1);
      assert.equal(c('ratelimit.service.rate_limit.api.h.total_hits'), 3, 'hits_addend counts as hits');
      assert.equal(c('ratelimit.service.rate_limit.nope.domain_not_found'), 1);
      assert.equal(c('ratelimit.service.config_load_success'), 1);
      for (const ms of timers.get('ratelimit_server.ShouldRateLimit.response_time.__env=prod') ?? []) {
        assert.ok(Number.isInteger(ms) && ms >= 0, 'whole milliseconds, as envoy’s interceptor');
      }
      for (const name of counters.keys()) {
        assert.ok(name.endsWith('.__env=prod'), `${name}: EXTRA_TAGS on every name`);
        assert.ok(upstreamStatsd(name.slice(0, -'.__env=prod'.length), 'c'), `${name} is not one of upstream's`);
      }
      for (const name of timers.keys()) assert.ok(upstreamStatsd(name.slice(0, -'.__env=prod'.length), 'ms'), name);
      // sluice's own names are unchanged on GET /metrics.
      const page = await fetch(`http://127.0.0.1:${svc.sluice.http}/metrics`).then((r) => r.text());
      assert.match(page, /^sluice_decisions_total\{/m);
      assert.doesNotMatch(page, /^ratelimit_/m);
    } finally {
      assert.equal(await svc.stop(), 0);
      runtime.dispose();
      receiver.close();
    }
  });

  it('USE_PROMETHEUS: upstream’s Prometheus names on PROMETHEUS_ADDR; GET /metrics keeps sluice’s', async () => {
    const runtime = createRuntime(RULES);
    const port = await freePort();
    const svc = await startEnvoy({
      ...runtime.env,
      USE_STATSD: 'false',
      USE_PROMETHEUS: 'true',
      PROMETHEUS_ADDR: `127.0.0.1:${port}`,
    });
    try {
      assert.deepEqual(await traffic(svc), CODES);
      await svc.ask('api', [[['user', 'alice']]]);
      const text = await fetch(`http://127.0.0.1:${port}/metrics`).then((r) => r.text());
      const value = (series: string) => {
        const line = text.split('\n').find((l) => l.startsWith(`${series} `));
        return line === undefined ? undefined : Number(line.slice(series.length + 1));
      };
      assert.equal(value('ratelimit_service_rate_limit_total_hits{domain="api",key1="k"}'), 5);
      assert.equal(value('ratelimit_service_rate_limit_within_limit{domain="api",key1="k"}'), 4);
      assert.equal(value('ratelimit_service_rate_limit_near_limit{domain="api",key1="k"}'), 1);
      assert.equal(value('ratelimit_service_rate_limit_over_limit{domain="api",key1="k"}'), 1);
      assert.equal(value('ratelimit_service_rate_limit_shadow_mode{domain="api",key1="s"}'), 1);
      assert.equal(value('ratelimit_service_rate_limit_total_hits{domain="api",key1="user_alice"}'), 1);
      assert.equal(value('ratelimit_service_config_load_success'), 1);
      assert.equal(value('ratelimit_service_total_requests{grpc_method="ShouldRateLimit"}'), CALLS + 1);
      assert.equal(value('ratelimit_service_response_time_seconds_count{grpc_method="ShouldRateLimit"}'), CALLS + 1);
      const names = new Set(UPSTREAM.prometheus.map((p) => p.name));
      for (const line of text.split('\n')) {
        const m = /^# TYPE (ratelimit_\S+) (\S+)$/.exec(line);
        if (m === null) continue;
        const known = UPSTREAM.prometheus.find((p) => p.name === m[1]);
        // Names no mapping matches are exported escaped, as the statsd exporter does.
        if (known === undefined) assert.equal(m[1], 'ratelimit_service_rate_limit_nope_domain_not_found');
        else assert.equal(m[2], known.type, `${m[1]}'s type`);
      }
      assert.ok(names.has('ratelimit_service_rate_limit_total_hits'));
      assert.match(text, /^sluice_decisions_total\{/m, "sluice's names stay beside envoy's on the listener");
      const own = await fetch(`http://127.0.0.1:${svc.sluice.http}/metrics`).then((r) => r.text());
      assert.doesNotMatch(own, /^ratelimit_/m);
    } finally {
      assert.equal(await svc.stop(), 0);
      runtime.dispose();
    }
  });

  it('statsd unresolvable or its port closed: the same decisions, the lines dropped and counted', async () => {
    const closed = createSocket('udp4');
    await new Promise<void>((resolve) => closed.bind(0, '127.0.0.1', resolve));
    const closedPort = closed.address().port;
    closed.close();
    for (const [host, port] of [
      ['statsd.invalid', '8125'],
      ['127.0.0.1', String(closedPort)],
    ] as const) {
      const runtime = createRuntime(RULES);
      const svc = await startEnvoy({
        ...runtime.env,
        STATSD_HOST: host,
        STATSD_PORT: port,
        STATS_FLUSH_INTERVAL: '100ms',
      });
      try {
        assert.deepEqual(await traffic(svc), CODES, `${host}:${port}`);
        if (host === 'statsd.invalid') {
          // Dropped lines show on sluice's /metrics once a flush has failed (polled, not timed).
          let dropped = 0;
          while (dropped === 0) {
            const page = await fetch(`http://127.0.0.1:${svc.sluice.http}/metrics`).then((r) => r.text());
            dropped = Number(/^sluice_envoy_stats_dropped (\d+)/m.exec(page)?.[1] ?? 0);
          }
          assert.ok(dropped > 0);
        }
      } finally {
        assert.equal(await svc.stop(), 0);
        runtime.dispose();
      }
    }
  });

  it('SHADOW_MODE counts global_shadow_mode; a refused reload config_load_error, a good one config_load_success', async () => {
    const receiver = await statsdReceiver();
    const runtime = createRuntime(RULES);
    const token = 'envoy-metrics-admin-token-0123456789';
    const svc = await startEnvoy({
      ...runtime.env,
      SHADOW_MODE: 'true',
      SLUICE_ADMIN_TOKEN: token,
      STATSD_HOST: '127.0.0.1',
      STATSD_PORT: String(receiver.port),
      STATS_FLUSH_INTERVAL: '100ms',
    });
    const reload = () =>
      fetch(`http://127.0.0.1:${svc.sluice.http}/admin/reload`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: '{}',
      }).then((r) => r.json() as Promise<{ ok: boolean }>);
    try {
      const codes: string[] = [];
      for (let i = 0; i < 5; i++) codes.push((await svc.ask('api', [[['k', 'v']]])).overallCode ?? '');
      assert.deepEqual(codes, ['OK', 'OK', 'OK', 'OK', 'OK'], 'the global shadow mode lets the fifth through');
      runtime.write('bad.yaml', 'domain: [');
      assert.equal((await reload()).ok, false);
      runtime.remove('bad.yaml');
      assert.equal((await reload()).ok, true);
      const name = (n: string) => `ratelimit.service.${n}`;
      await receiver.until((lines) => {
        const { counters } = tally(lines);
        // The file watcher may reload too, as well as /admin/reload: at least one of each after the start's.
        return (
          (counters.get(name('config_load_error')) ?? 0) >= 1 && (counters.get(name('config_load_success')) ?? 0) >= 2
        );
      });
      const { counters } = tally(receiver.lines);
      assert.equal(counters.get(name('global_shadow_mode')), 1);
      assert.equal(
        counters.get(name('rate_limit.api.k.over_limit')),
        1,
        'envoy counts the shadowed hit over the limit',
      );
      assert.equal(
        counters.get(name('rate_limit.api.k.shadow_mode')),
        undefined,
        'shadow_mode is for shadow_mode rules',
      );
    } finally {
      assert.equal(await svc.stop(), 0);
      runtime.dispose();
      receiver.close();
    }
  });

  it('huge and many descriptor values: bounded keys, counted under _overflow_', async () => {
    const receiver = await statsdReceiver();
    const runtime = createRuntime(RULES);
    const svc = await startEnvoy(
      { ...runtime.env, STATSD_HOST: '127.0.0.1', STATSD_PORT: String(receiver.port), STATS_FLUSH_INTERVAL: '100ms' },
      ['--envoy-compat', '--max-descriptor-series', '3'],
    );
    try {
      const huge = 'x'.repeat(1000); // sluice's own bound on a value is 1024 characters
      assert.equal((await svc.ask('api', [[['user', huge]]])).overallCode, 'OK');
      for (let i = 0; i < 20; i++) await svc.ask('api', [[['user', `u${i}\nevil:1|c`]]]);
      await receiver.until(
        (lines) => tally(lines).counters.get('ratelimit_server.ShouldRateLimit.total_requests') === 21,
      );
      const { counters } = tally(receiver.lines);
      assert.equal(
        counters.get('ratelimit.service.rate_limit._overflow_.total_hits'),
        1 + 20 - 3,
        'the huge value and all past the cap',
      );
      const hitNames = [...counters.keys()].filter((n) => n.endsWith('.total_hits'));
      assert.equal(hitNames.length, 3 + 1, 'the cap, then one overflow key');
      for (const name of counters.keys()) assert.ok(name.length < 600, 'no name carries the huge value');
      assert.ok(!counters.has('evil'), 'a newline in a value does not start a line of its own');
    } finally {
      assert.equal(await svc.stop(), 0);
      runtime.dispose();
      receiver.close();
    }
  });
});
