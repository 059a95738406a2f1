// deploy/kubernetes: `kubectl kustomize` renders the base and the Envoy Gateway overlay; sluice started with
// the rendered container's args, env and mounted ConfigMap (laid out as kubelet does) answers the probes'
// paths and ports, and a ConfigMap update swapped in as kubelet does is served without a restart.
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { type AddressInfo, connect, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import grpc from '@grpc/grpc-js';
import { createRlsClient } from 'sluice-server';
import { parseAllDocuments } from 'yaml';
import { startSluice } from './start-sluice.js';

const KUBE = join(import.meta.dirname, '..', '..', 'deploy/kubernetes');
interface Doc {
  kind: string;
  metadata: { name: string };
  // biome-ignore lint/suspicious/noExplicitAny: rendered manifests are read field by field, as kubectl does
  spec?: any;
  data?: Record<string, string>;
}
type Probe = {
  httpGet?: { path: string; port: string | number };
  tcpSocket?: { port: string | number };
  grpc?: { port: number };
};

/** kubectl's kustomize renders the manifests; without kubectl on the machine there is nothing to render with. */
const NO_KUBECTL =
  spawnSync('kubectl', ['version', '--client'], { encoding: 'utf8' }).error === undefined
    ? false
    : 'kubectl is not installed (its kustomize renders the manifests)';

function render(dir: string): Doc[] {
  const text = execFileSync('kubectl', ['kustomize', join(KUBE, dir)], { encoding: 'utf8' });
  return parseAllDocuments(text).map((d) => d.toJS() as Doc);
}

/** A ConfigMap volume as kubelet writes it: files are links through `..data`, swapped atomically on update. */
function writeConfigMap(dir: string, data: Record<string, string>, version: number): void {
  const target = `..${version}`;
  mkdirSync(join(dir, target), { recursive: true });
  for (const [file, text] of Object.entries(data)) {
    writeFileSync(join(dir, target, file), text);
    try {
      symlinkSync(join('..data', file), join(dir, file));
    } catch {
      // the file's link exists from the first version
    }
  }
  symlinkSync(target, join(dir, '..data_tmp'));
  renameSync(join(dir, '..data_tmp'), join(dir, '..data'));
}

/** Whether a TCP connection to the port is accepted (kubelet's tcpSocket probe). */
function tcpOpen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1', () => {
      socket.destroy();
      resolve(true);
    });
    socket.on('error', () => resolve(false));
  });
}

/** What kubelet's probe of the rendered container would answer: true when it passes. */
async function probePasses(probe: Probe, local: (port: string | number) => number): Promise<boolean> {
  if (probe.httpGet)
    return (await fetch(`http://127.0.0.1:${local(probe.httpGet.port)}${probe.httpGet.path}`)).status === 200;
  if (probe.tcpSocket) return tcpOpen(local(probe.tcpSocket.port));
  if (probe.grpc) return (await grpcHealth(local(probe.grpc.port)).catch(() => 0)) === 1; // 1: SERVING
  throw new Error(`a probe of a kind this test does not know: ${JSON.stringify(probe)}`);
}

function grpcHealth(port: number): Promise<number> {
  const client = new grpc.Client(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
  return new Promise((resolve, reject) =>
    client.makeUnaryRequest(
      '/grpc.health.v1.Health/Check',
      (b: Buffer) => b,
      (b: Buffer) => b,
      Buffer.alloc(0),
      (err, res) => {
        client.close();
        if (err || res === undefined) reject(err);
        else resolve(res[0] === 0x08 ? (res[1] ?? 0) : 0);
      },
    ),
  );
}

/** The base rendered, and sluice started with its container's args, env and ConfigMap (Redis at `redisUrl`). */
async function startRendered(redisUrl?: string) {
  const docs = render('base');
  const deployment = docs.find((d) => d.kind === 'Deployment') as Doc;
  const pod = deployment.spec.template.spec;
  const container = pod.containers[0];
  const mount = container.volumeMounts[0];
  const volume = pod.volumes.find((v: { name: string }) => v.name === mount.name);
  const configMap = docs.find((d) => d.kind === 'ConfigMap' && d.metadata.name === volume.configMap.name) as Doc;
  const root = mkdtempSync(join(tmpdir(), 'kube-'));
  const mounted = join(root, mount.mountPath);
  writeConfigMap(mounted, configMap.data ?? {}, 1);
  const args = (container.args as string[]).map((a) => a.replace(mount.mountPath, mounted));
  const env = Object.fromEntries(container.env.map((e: { name: string; value: string }) => [e.name, e.value]));
  env.REDIS_URL = redisUrl ?? env.REDIS_URL.replace('//redis:', '//127.0.0.1:');
  const service = await startSluice(args, env);
  // Container ports to the ports this process got (it ran with port 0).
  const named = new Map<string, number>(
    container.ports.map((p: { name: string; containerPort: number }) => [p.name, p.containerPort]),
  );
  const actual = new Map([
    [8080, service.http],
    [8081, service.grpc],
  ]);
  const local = (port: string | number) => actual.get(typeof port === 'string' ? (named.get(port) ?? 0) : port) ?? 0;
  const stop = async () => {
    await service.stop();
    rmSync(root, { recursive: true, force: true });
  };
  return { docs, pod, container, configMap, mounted, service, local, stop };
}

test(
  'the base renders every object and sluice answers the probes with the rendered container',
  { skip: NO_KUBECTL },
  async () => {
    const { docs, pod, container, configMap, mounted, service, local, stop } = await startRendered();
    assert.deepEqual(docs.map((d) => d.kind).sort(), [
      'ConfigMap',
      'Deployment',
      'HorizontalPodAutoscaler',
      'PodDisruptionBudget',
      'Service',
      'ServiceMonitor',
    ]);
    assert.equal(pod.securityContext.runAsUser, 65532);
    const client = createRlsClient(`127.0.0.1:${service.grpc}`);
    try {
      for (const probe of [container.readinessProbe, container.livenessProbe, container.startupProbe] as Probe[])
        assert.ok(await probePasses(probe, local), JSON.stringify(probe));
      const user = `k-${process.pid}-${Date.now()}`;
      const once = async () =>
        (await client.shouldRateLimit({ domain: 'api', descriptors: [{ entries: [{ key: 'user', value: user }] }] }))
          .overallCode;
      // The rendered container keeps the 50 ms Redis timeout; on a loaded machine (a reload's worker starting
      // beside the whole suite) one call may miss it and answer UNAVAILABLE. That is not what this test is
      // about: such a call is asked again, at most three times.
      const ask = async (): Promise<string | undefined> => {
        for (let attempt = 1; ; attempt++) {
          try {
            return await once();
          } catch (error) {
            if ((error as { code?: number }).code !== grpc.status.UNAVAILABLE || attempt === 3) throw error;
          }
        }
      };
      assert.equal(await ask(), 'OK');
      // kubectl apply of an edited rule: 1 a minute. Served by the same process once kubelet swaps it in.
      const edited = (configMap.data?.['rules.yaml'] ?? '').replace('requests_per_unit: 100', 'requests_per_unit: 1');
      writeConfigMap(mounted, { 'rules.yaml': edited }, 2);
      const deadline = Date.now() + 15_000;
      let code = await ask();
      while (code !== 'OVER_LIMIT' && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 100));
        code = await ask();
      }
      assert.equal(code, 'OVER_LIMIT', `the edited rule was not served:\n${service.output()}`);
    } finally {
      client.close();
      await stop();
    }
  },
);

// kubelet restarts a container whose liveness probe fails: if it asked about the store, a Redis outage of half a
// minute would restart every replica at once, and pods started during it would never get past their startup probe.
test(
  'with Redis unreachable, the rendered pod is not ready but stays alive and started',
  { skip: NO_KUBECTL },
  async () => {
    const closed = await new Promise<number>((resolve) => {
      const server = createServer().listen(0, '127.0.0.1', () => {
        const { port } = server.address() as AddressInfo;
        server.close(() => resolve(port));
      });
    });
    const { container, local, stop } = await startRendered(`redis://127.0.0.1:${closed}`);
    try {
      assert.equal(await probePasses(container.readinessProbe, local), false, 'not ready: no store');
      assert.equal(await probePasses(container.livenessProbe, local), true, 'alive');
      assert.equal(await probePasses(container.startupProbe, local), true, 'started');
    } finally {
      await stop();
    }
  },
);

test('the Envoy Gateway overlay points Envoy Gateway at the sluice image', { skip: NO_KUBECTL }, () => {
  const docs = render('overlays/envoy-gateway');
  const config = docs.find((d) => d.kind === 'ConfigMap' && d.metadata.name === 'envoy-gateway-config') as Doc;
  const text = config.data?.['envoy-gateway.yaml'] ?? '';
  assert.match(text, /rateLimitDeployment:/);
  assert.match(text, /image: ghcr\.io\/example\/sluice-server:0\.1\.0/);
  assert.match(text, /url: redis\.redis-system\.svc\.cluster\.local:6379/);
});
