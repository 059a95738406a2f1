import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseSimulateArgs } from '../../cli/commands/simulate.js';
import { simulateOverload } from './overload.js';
import { formatOverloadTable, renderOverloadSvg } from './overload-report.js';

const OPTIONS = {
  capacity: 32,
  serviceMs: 10,
  load: 3,
  slowdown: 5,
  durationMs: 30_000,
  critical: 0.2,
  initialLimit: 20,
};

describe('sluice simulate --overload', () => {
  const rows = simulateOverload(OPTIONS);
  const row = (name: string) => rows.find((r) => r.name === name) as (typeof rows)[number];

  it('without a limiter the queue eats everything; adaptive limits keep goodput near capacity', () => {
    assert.ok(row('no limiter').goodput[0] < 0.1, `${row('no limiter').goodput}`);
    for (const name of ['gradient2', 'vegas', 'aimd']) {
      assert.ok(row(name).goodput[0] >= 0.9, `${name} before: ${row(name).goodput[0]}`);
      assert.ok(row(name).goodput[1] >= 0.75, `${name} after: ${row(name).goodput[1]}`);
    }
    // A fixed limit below the capacity wastes what is above it.
    assert.ok(row('fixed concurrency').goodput[0] < 0.7);
  });

  it('latency-based limits settle within 10 s of the slowdown; critical requests keep their share', () => {
    for (const name of ['gradient2', 'vegas']) {
      const settle = row(name).settleMs;
      assert.ok(settle !== undefined && settle <= 10_000, `${name}: ${settle}`);
      // Critical demand is 60 % of the capacity before the slowdown, and its share half of the limit.
      assert.ok(row(name).criticalOk[0] >= 0.75, `${name}: ${row(name).criticalOk[0]}`);
    }
  });

  it('is deterministic, and reports as a table and an SVG chart', () => {
    assert.deepEqual(simulateOverload(OPTIONS), rows);
    const table = formatOverloadTable(OPTIONS, rows);
    for (const name of ['no limiter', 'fixed concurrency', 'gradient2', 'vegas', 'aimd'])
      assert.match(table, new RegExp(name));
    const svg = renderOverloadSvg(OPTIONS, rows);
    assert.match(svg, /^<svg [^>]*xmlns="http:\/\/www.w3.org\/2000\/svg"/);
    assert.equal((svg.match(/<polyline /g) ?? []).length, 4);
  });

  it('parses its flags; bad values name the flag', () => {
    const args = parseSimulateArgs(['--overload', '--capacity', '8', '--service-time', '20ms', '--load', '2']);
    assert.deepEqual(args.overload, { capacity: 8, serviceMs: 20, slowdown: 5, critical: 0.2, initialLimit: 20 });
    assert.equal(args.load, 2);
    assert.throws(() => parseSimulateArgs(['--overload', '--critical', '2']), /--critical/);
    assert.throws(() => parseSimulateArgs(['--overload', '--capacity', '0']), /--capacity/);
  });

  it('refuses --load and --capacity too large to simulate in reasonable time, naming the flag and its maximum', () => {
    const refused = (argv: string[], message: RegExp) =>
      assert.throws(
        () => parseSimulateArgs(['--overload', ...argv]),
        (e: { code?: string; message?: string }) =>
          e.code === 'ERR_SLUICE_INVALID_OPTION' && message.test(e.message ?? ''),
      );
    refused(['--load', '1e9'], /^--load: at most 10 with --overload/);
    refused(['--capacity', '1000000'], /^--capacity: at most 128 with --overload/);
    assert.equal(parseSimulateArgs(['--overload', '--load', '10', '--capacity', '128']).overload?.capacity, 128);
    // Without --overload, --load is the trace's multiple of the limit and keeps its own range.
    assert.equal(parseSimulateArgs(['--load', '50']).load, 50);
  });
});
