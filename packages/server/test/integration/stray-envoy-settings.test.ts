/**
 * envoy ratelimit's settings given to `sluice serve` outside envoy mode do nothing, so the service says
 * so once, naming `--envoy-compat`; in envoy mode they are honoured and nothing is said.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { it } from 'node:test';
import { serveOptions } from '../../src/cli/commands/serve.js';
import { ROOT, startSluice } from './helpers.js';

const CONFIG = join(ROOT, 'test', 'integration', 'fixtures', 'envoy.yaml');
const ENVOY_ENV = { MERGE_DOMAIN_CONFIG: 'true', LIMIT_RESPONSE_HEADERS_ENABLED: 'true' };

it(
  'the running service warns once, naming every envoy-only setting and --envoy-compat',
  { timeout: 60_000 },
  async () => {
    const service = await startSluice(['--config', CONFIG], ENVOY_ENV);
    try {
      const record = await service.waitForLog((r) => String(r.msg).includes('--envoy-compat'), 10_000);
      assert.match(
        String(record.msg),
        /^LIMIT_RESPONSE_HEADERS_ENABLED, MERGE_DOMAIN_CONFIG are envoy ratelimit settings/,
      );
      assert.equal(record.level, 40, 'a warning (pino level 40)');
      const res = await fetch(`http://127.0.0.1:${service.http}/healthcheck`);
      assert.equal(res.status, 200, 'and serves as usual');
      const mentions = service.stdout.filter((line) => line.includes('--envoy-compat'));
      assert.equal(mentions.length, 1, mentions.join('\n'));
    } finally {
      await service.stop();
    }
  },
);

it('no warning in envoy mode (where they are honoured), nor for the names sluice reads itself', () => {
  const envoy = serveOptions(['--envoy-compat', '--config', CONFIG], ENVOY_ENV);
  assert.equal(envoy.warnings.filter((w) => w.includes('--envoy-compat')).length, 0);
  const own = serveOptions(['--config', CONFIG], {
    PORT: '9000',
    REDIS_URL: 'redis://127.0.0.1:6379',
    LOG_LEVEL: 'info',
  });
  assert.deepEqual(own.warnings, []);
  const one = serveOptions(['--config', CONFIG], { USE_STATSD: 'true' });
  assert.equal(one.warnings.length, 1);
  assert.match(one.warnings[0] ?? '', /^USE_STATSD is an envoy ratelimit setting.*--envoy-compat/);
});
