// deploy/kubernetes: `kubectl kustomize` renders the base and the Envoy Gateway overlay; sluice started with
// the rendered container's args, env and mounted ConfigMap (laid out as kubelet does) answers the probes'
// paths and ports, and a ConfigMap update swapped in as kubelet does is served without a restart.
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
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
type Probe = { httpGet?: { path: string; port: string | number }; grpc?: { port: number } };

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

test(
  'the base renders every object and sluice answers the probes with the rendered container',
  { skip: NO_KUBECTL },
  async () => {
    const docs = render('base');
    assert.deepEqual(docs.map((d) => d.kind).sort(), [
      'ConfigMap',
      'Deployment',
      'HorizontalPodAutoscaler',
      'PodDisruptionBudget',
      'Service',
      'ServiceMonitor',
    ]);
    const deployment = docs.find((d) => d.kind === 'Deployment') as Doc;
    const pod = deployment.spec.template.spec;
    const container = pod.containers[0];
    assert.equal(pod.securityContext.runAsUser, 65532);
    const mount = container.volumeMounts[0];
    const volume = pod.volumes.find((v: { name: string }) => v.name === mount.name);
    const configMap = docs.find((d) => d.kind === 'ConfigMap' && d.metadata.name === volume.configMap.name) as Doc;
    const root = mkdtempSync(join(tmpdir(), 'kube-'));
    const mounted = join(root, mount.mountPath);
    writeConfigMap(mounted, configMap.data ?? {}, 1);
    const args = (container.args as string[]).map((a) => a.replace(mount.mountPath, mounted));
    const env = Object.fromEntries(container.env.map((e: { name: string; value: string }) => [e.name, e.value]));
    env.REDIS_URL = env.REDIS_URL.replace('//redis:', '//127.0.0.1:');
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
    const client = createRlsClient(`127.0.0.1:${service.grpc}`);
    try {
      for (const probe of [container.readinessProbe, container.livenessProbe, container.startupProbe] as Probe[]) {
        if (probe.httpGet)
          assert.equal((await fetch(`http://127.0.0.1:${local(probe.httpGet.port)}${probe.httpGet.path}`)).status, 200);
        if (probe.grpc) assert.equal(await grpcHealth(local(probe.grpc.port)), 1, 'grpc.health.v1 SERVING');
      }
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
      await service.stop();
      rmSync(root, { recursive: true, force: true });
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
