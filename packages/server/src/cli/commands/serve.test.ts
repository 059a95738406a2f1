import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { StoreOptions } from '../../app/service-options.js';
import { serveOptions } from './serve.js';

/** The memory store's options the flags give. */
const memoryOf = (argv: string[]) => (serveOptions(argv, {}).options.store as StoreOptions | undefined)?.memory;

const usage = (argv: string[], pattern: RegExp) =>
  assert.throws(
    () => serveOptions(argv, {}),
    (e: unknown) => {
      assert.equal((e as { code?: string }).code, 'ERR_SLUICE_INVALID_OPTION');
      assert.match((e as Error).message, pattern);
      return true;
    },
  );

describe('sluice serve flags', () => {
  it('--memory-max-keys sizes the memory store; --insurance-share goes to the engine', () => {
    assert.deepEqual(memoryOf(['--memory-max-keys', '50000']), { maxKeys: 50_000 });
    assert.deepEqual(memoryOf(['--memory-max-keys', '10', '--memory-max-bytes', '256mb']), {
      maxKeys: 10,
      maxBytes: 256 * 1024 * 1024,
    });
    assert.deepEqual(memoryOf(['--memory-max-bytes', '2097152']), { maxBytes: 2 * 1024 * 1024 });
    const { options } = serveOptions(['--fail', 'insurance', '--insurance-share', '0.25'], {});
    assert.equal(options.insuranceShare, 0.25);
    assert.equal(options.fail, 'insurance');
  });

  it('--max-descriptor-series caps the per-value series of detailed_metric rules', () => {
    assert.equal(serveOptions(['--max-descriptor-series', '500'], {}).options.observability?.maxDescriptorSeries, 500);
    assert.equal(serveOptions([], {}).options.observability?.maxDescriptorSeries, undefined);
    for (const bad of ['0', '-1', '1.5', '2000000', 'all']) {
      usage(
        [`--max-descriptor-series=${bad}`],
        /^--max-descriptor-series: '.*' is not a whole number from 1 to 1000000/,
      );
    }
  });

  it('refuses bad values with a code, naming the flag and what it takes', () => {
    for (const bad of ['0', '-5', '1.5', '1e3', '', 'many', String(2 ** 31)]) {
      usage([`--memory-max-keys=${bad}`], /^--memory-max-keys: '.*' is not a whole number from 1 to/);
    }
    usage(['--redis', 'redis://127.0.0.1:6379', '--memory-max-keys', '10'], /with --redis there is none/);
    for (const bad of ['0', '100', '1tb', '65gb', 'lots', '', '-1mb']) {
      usage([`--memory-max-bytes=${bad}`], /^--memory-max-bytes: '.*' is not a size from 1mb to 64gb/);
    }
    for (const bad of ['0', '-0.5', '1.01', 'half', '', 'NaN', 'Infinity']) {
      usage(['--fail', 'insurance', `--insurance-share=${bad}`], /^--insurance-share: '.*' is not a number above 0/);
    }
    usage(['--insurance-share', '0.5'], /only applies with --fail insurance/);
    usage(['--fail', 'open', '--insurance-share', '0.5'], /only applies with --fail insurance/);
  });
});
