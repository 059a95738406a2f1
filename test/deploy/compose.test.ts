// deploy/compose: the compose file parses, sluice starts with exactly the environment and files it gives
// (Redis on this machine instead of the `redis` service), and Envoy's and Prometheus's configs name the
// service and the ports sluice listens on.
import assert from 'node:assert/strict';
import { cpSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { createRlsClient } from 'sluice-server';
import { parse } from 'yaml';
import { startSluice } from './start-sluice.js';

const ROOT = join(import.meta.dirname, '..', '..');
const COMPOSE = join(ROOT, 'deploy/compose');
type Service = {
  environment?: Record<string, string>;
  volumes?: string[];
  build?: { context: string; dockerfile: string };
};

/** The image's ENV defaults, read from the Dockerfile the compose file builds. */
function imageEnv(): Record<string, string> {
  const line =
    readFileSync(join(ROOT, 'Dockerfile'), 'utf8')
      .split('\n')
      .find((l) => l.startsWith('ENV ')) ?? '';
  return Object.fromEntries(
    line
      .slice(4)
      .split(' ')
      .map((kv) => kv.split('=') as [string, string]),
  );
}

const compose = parse(readFileSync(join(COMPOSE, 'docker-compose.yml'), 'utf8')) as {
  services: Record<string, Service>;
};

test('the compose file has the example shape and builds the repo Dockerfile', () => {
  assert.deepEqual(Object.keys(compose.services).sort(), [
    'envoy',
    'grafana',
    'prometheus',
    'redis',
    'sluice',
    'upstream',
  ]);
  const sluice = compose.services.sluice as Service;
  assert.equal(join(COMPOSE, sluice.build?.context ?? '', sluice.build?.dockerfile ?? ''), join(ROOT, 'Dockerfile'));
});

test("Envoy's and Prometheus's configs name sluice's service and ports", () => {
  const envoy = parse(readFileSync(join(COMPOSE, 'envoy.yaml'), 'utf8'));
  const cluster = envoy.static_resources.clusters.find((c: { name: string }) => c.name === 'ratelimit');
  const address = cluster.load_assignment.endpoints[0].lb_endpoints[0].endpoint.address.socket_address;
  assert.deepEqual(address, { address: 'sluice', port_value: Number(imageEnv().GRPC_PORT) });
  const filter = envoy.static_resources.listeners[0].filter_chains[0].filters[0].typed_config.http_filters[0];
  assert.equal(filter.typed_config.rate_limit_service.grpc_service.envoy_grpc.cluster_name, 'ratelimit');
  const rules = parse(readFileSync(join(COMPOSE, 'ratelimit/config/example.yaml'), 'utf8'));
  assert.equal(filter.typed_config.domain, rules.domain);
  const prometheus = parse(readFileSync(join(COMPOSE, 'prometheus.yml'), 'utf8'));
  assert.deepEqual(prometheus.scrape_configs[0].static_configs[0].targets, [`sluice:${imageEnv().PORT}`]);
});

test('sluice starts with exactly the environment and files the compose file gives, and limits', async () => {
  const sluice = compose.services.sluice as Service;
  const data = mkdtempSync(join(tmpdir(), 'compose-data-'));
  // Each volume's host side is copied where its container side says, under a temporary root.
  const env: Record<string, string> = { ...imageEnv(), ...sluice.environment };
  for (const volume of sluice.volumes ?? []) {
    const [from, to] = volume.split(':') as [string, string];
    cpSync(join(COMPOSE, from), join(data, to), { recursive: true });
  }
  env.RUNTIME_ROOT = join(data, env.RUNTIME_ROOT as string);
  env.REDIS_URL = (env.REDIS_URL as string).replace(/^redis:/, '127.0.0.1:');
  const service = await startSluice(['serve'], env);
  const client = createRlsClient(`127.0.0.1:${service.grpc}`);
  try {
    assert.match(service.output(), /"store":"redis"/);
    assert.equal((await fetch(`http://127.0.0.1:${service.http}/healthcheck`)).status, 200);
    const me = `10.0.${process.pid % 250}.${Date.now() % 250}`;
    const ask = () =>
      client.shouldRateLimit({ domain: 'edge', descriptors: [{ entries: [{ key: 'remote_address', value: me }] }] });
    const codes = [];
    for (let i = 0; i < 6; i++) codes.push((await ask()).overallCode);
    assert.deepEqual(codes, ['OK', 'OK', 'OK', 'OK', 'OK', 'OVER_LIMIT']);
  } finally {
    client.close();
    await service.stop();
    rmSync(data, { recursive: true, force: true });
  }
});
