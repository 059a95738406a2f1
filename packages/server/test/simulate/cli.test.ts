import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { simulateCommand } from '../../src/cli/commands/simulate.js';
import type { Summary } from '../../src/tools/simulate/index.js';
import { checkXml } from './xml-check.js';

/** Runs the command in-process with captured output. */
async function runSimulate(...argv: string[]): Promise<{ code: number; out: string; err: string }> {
  let out = '';
  let err = '';
  const code = await simulateCommand.run(argv, {
    out: (text) => {
      out += `${text}\n`;
    },
    err: (text) => {
      err += `${text}\n`;
    },
  });
  return { code, out, err };
}

let dir: string;
before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'sluice-simulate-'));
});
after(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('sluice simulate (in process)', () => {
  it('by default runs the boundary trace through all six algorithms and prints the table', async () => {
    const { code, out, err } = await runSimulate();
    assert.equal(code, 0, err);
    assert.match(out, /^boundary trace: 60 requests over 6\.19s; limit 10 per 1s\n/);
    assert.match(out, /\| fixed-window +\| +60 \| +0 \| 20 \(2× limit\)/);
    assert.match(out, /\| sliding-log +\| +30 \| +30 \| 10 \(1× limit\)/);
    for (const name of ['sliding-window', 'token-bucket', 'leaky-bucket', 'gcra']) assert.ok(out.includes(`| ${name}`));
  });

  it('--json prints the summary as data', async () => {
    const { code, out } = await runSimulate(
      '--trace',
      'poisson',
      '--algorithms',
      'sliding-window,sliding-log',
      '--json',
    );
    assert.equal(code, 0);
    const summary = JSON.parse(out) as Summary;
    assert.equal(summary.trace, 'poisson');
    assert.deepEqual(
      summary.rows.map((r) => r.algorithm),
      ['sliding-window', 'sliding-log'],
    );
    const sw = summary.rows[0];
    assert.ok(sw?.exact && sw.exact.total === summary.requests);
    assert.equal(sw.exact.errorRate, (sw.exact.wronglyAllowed + sw.exact.wronglyRejected) / sw.exact.total);
    assert.ok((summary.rows[1]?.peak ?? 99) <= 10);
  });

  it('honours --limit, --period, --burst, --duration, --load and --seed', async () => {
    const { code, out } = await runSimulate(
      '--trace',
      'steady',
      '--algorithms',
      'token-bucket',
      '--limit',
      '5',
      '--period',
      '500ms',
      '--burst',
      '2',
      '--duration',
      '10s',
      '--load',
      '2',
      '--seed',
      '9',
      '--json',
    );
    assert.equal(code, 0);
    const summary = JSON.parse(out) as Summary;
    assert.deepEqual([summary.limit, summary.periodMs, summary.burst, summary.requests], [5, 500, 2, 200]);
    // 20 requests/s offered to 10/s with a bucket of 2: half pass, plus the first burst.
    assert.equal(summary.rows[0]?.admitted, 101);
  });

  it('--out writes a well-formed SVG (one chart, or all stacked) and an HTML report', async () => {
    const one = join(dir, 'nested', 'fixed.svg');
    assert.equal((await runSimulate('--algorithms', 'fixed-window', '--out', one)).code, 0);
    const svg = await readFile(one, 'utf8');
    assert.equal(checkXml(svg)[0]?.name, 'svg');
    assert.ok(svg.includes('peak 20'));

    const all = join(dir, 'all.svg');
    const r = await runSimulate('--trace', 'bursty', '--out', all);
    assert.match(r.err, /wrote .*all\.svg/);
    assert.equal(
      checkXml(await readFile(all, 'utf8')).filter((e) => e.name === 'g' && e.attributes.transform).length,
      6,
    );

    const html = join(dir, 'report.html');
    assert.equal((await runSimulate('--trace', 'poisson', '--out', html)).code, 0);
    const els = checkXml(await readFile(html, 'utf8'));
    assert.equal(els.filter((e) => e.name === 'svg').length, 6);
  });

  it('reads a CSV trace', async () => {
    const file = join(dir, 'ok.csv');
    await writeFile(file, 'timestamp,cost\n800\n900\n950\n1000\n1050\n1100\n1900,2\n');
    const { code, out } = await runSimulate(
      '--trace',
      file,
      '--limit',
      '3',
      '--algorithms',
      'fixed-window,sliding-log',
      '--json',
    );
    assert.equal(code, 0);
    const summary = JSON.parse(out) as Summary;
    assert.equal(summary.trace, 'ok.csv');
    assert.deepEqual(
      summary.rows.map((r) => [r.admitted, r.rejected, r.peak]),
      [
        [6, 1, 6],
        [4, 3, 3],
      ],
    );
  });

  it('a CSV trace with bad lines exits 1 with an error naming each line', async () => {
    const file = join(dir, 'bad.csv');
    await writeFile(file, 'timestamp\n0\nlater\n200,abc\n');
    const { code, out, err } = await runSimulate('--trace', file);
    assert.equal(code, 1);
    assert.equal(out, '');
    assert.match(err, /bad\.csv: 2 bad lines/);
    assert.match(err, /bad\.csv:3: 'later' is not a timestamp/);
    assert.match(err, /bad\.csv:4: cost 'abc'/);
  });

  it('a missing CSV file exits 1', async () => {
    const { code, err } = await runSimulate('--trace', join(dir, 'missing.csv'));
    assert.equal(code, 1);
    assert.match(err, /ENOENT|no such file/);
  });

  for (const [args, pattern] of [
    [['--limit', 'ten'], /--limit: 'ten' is not a whole number/],
    [['--limit', '0'], /--limit: '0' is not a whole number ≥ 1/],
    [['--period', 'soon'], /--period: 'soon' is not a duration/],
    [['--algorithms', 'fixed-window,leaky'], /--algorithms: 'leaky' is not an algorithm/],
    [['--trace', 'spiky'], /--trace: 'spiky' is neither a trace/],
    [['--out', 'chart.png'], /--out: 'chart\.png' must end in \.html or \.svg/],
    [['--load', '0'], /--load: '0' is not a positive number/],
    [['--burst', '-1'], /--burst/],
    [['--frobnicate'], /Unknown option '--frobnicate'/],
    [['extra'], /unexpected argument 'extra'/],
  ] as const) {
    it(`exits 2 on ${args.join(' ')}`, async () => {
      const { code, out, err } = await runSimulate(...args);
      assert.equal(code, 2);
      assert.equal(out, '');
      assert.match(err, pattern);
      assert.match(err, /sluice simulate --help/);
    });
  }

  it('has help that lists every option', () => {
    for (const option of [
      '--trace',
      '--algorithms',
      '--limit',
      '--period',
      '--burst',
      '--duration',
      '--load',
      '--seed',
      '--out',
      '--json',
    ]) {
      assert.ok(simulateCommand.help.includes(option), option);
    }
  });
});

describe('sluice simulate (as a child process)', () => {
  function sluice(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
    return new Promise((resolve, reject) => {
      const child = execFile(
        process.execPath,
        ['--import', 'tsx', fileURLToPath(new URL('../../src/cli/main.ts', import.meta.url)), ...args],
        { timeout: 60_000 },
        (error, stdout, stderr) => {
          if (error && typeof error.code !== 'number') reject(error);
          else resolve({ code: typeof error?.code === 'number' ? error.code : 0, stdout, stderr });
        },
      );
      child.stdin?.end();
    });
  }

  it('runs from the sluice entry point, writes a report and prints --help', async () => {
    const out = join(dir, 'child.html');
    const [run, help] = await Promise.all([
      sluice(['simulate', '--trace', 'boundary', '--algorithms', 'fixed-window,sliding-log', '--out', out]),
      sluice(['simulate', '--help']),
    ]);
    assert.equal(run.code, 0, run.stderr);
    assert.match(run.stdout, /\| fixed-window \| +60 \| +0 \| 20 \(2× limit\)/);
    assert.match(run.stderr, /wrote /);
    checkXml(await readFile(out, 'utf8'));
    assert.equal(help.code, 0);
    assert.match(help.stdout, /^usage: sluice simulate \[options\]/);
  });
});
