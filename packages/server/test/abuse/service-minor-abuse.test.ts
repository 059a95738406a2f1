/**
 * The minor findings of issue 37 on the service's HTTP side, each against the real `sluice serve`:
 * rules files echoed to anyone by `/api/rules` (10), a RUNTIME_ROOT swap after which edits went unseen
 * (11), keep-alive clients reset at shutdown (12), key masks that confirm guesses (14), and a dashboard
 * that any site could frame (15).
 */
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { Agent, request as httpRequest } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { type SluiceProcess, startSluice } from '../integration/helpers.js';

const TOKEN = 'minor-abuse-admin-token-0123456789';
const GOOD = `domain: probe
descriptors:
  - key: probe
    rate_limit: { unit: second, requests_per_unit: 1000000 }
`;
/** Longest answer `/api/rules` may give here: a few rules and a capped error, not the files. */
const MAX_RULES_ANSWER_BYTES = 16 * 1024;

describe('service minor abuse (issue 37: 10, 12, 14, 15)', () => {
  let sluice: SluiceProcess;
  let dir: string;
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'sluice-minor-abuse-'));
    mkdirSync(join(dir, 'rules'));
    writeFileSync(join(dir, 'rules', 'good.yaml'), GOOD);
    sluice = await startSluice(['--config', join(dir, 'rules'), '--no-watch'], { SLUICE_ADMIN_TOKEN: TOKEN });
  });
  after(async () => {
    await sluice?.stop();
    rmSync(dir, { recursive: true, force: true });
  });
  const base = () => `http://127.0.0.1:${sluice.http}`;
  const reload = async () => {
    const res = await fetch(`${base()}/admin/reload`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    return (await res.json()) as { ok: boolean };
  };
  /** What anyone (no token) reads about the config: `/api/rules`, `/api/status`, `/api/dashboard`. */
  const publicAnswers = async () =>
    Promise.all(
      ['/api/rules', '/api/status', '/api/dashboard'].map(async (path) => (await fetch(base() + path)).text()),
    );

  it('10: a rules file that is not a map (400 KB, or a link to a secret) is never echoed to anyone', async () => {
    const bad = join(dir, 'rules', 'bad.yaml');
    const secret = join(dir, 'secret.env');
    writeFileSync(secret, `SLUICE_ADMIN_TOKEN=${TOKEN}\u0000HOME=/root\u0000`);
    // A 400 KB file that is one string; links to a file holding a secret and to the service's own
    // environment (which holds the admin token).
    const cases: [string, () => void][] = [
      ['400 KB string', () => writeFileSync(bad, 'x'.repeat(400_000))],
      ['link to a secret', () => symlinkSync(secret, bad)],
      ['link to /proc/self/environ', () => symlinkSync('/proc/self/environ', bad)],
    ];
    const found: string[] = [];
    try {
      for (const [name, make] of cases) {
        rmSync(bad, { force: true });
        make();
        assert.equal((await reload()).ok, false, name);
        const [rules = '', ...others] = await publicAnswers();
        const size = Buffer.byteLength(rules);
        if (size > MAX_RULES_ANSWER_BYTES) found.push(`${name}: /api/rules answered ${size} bytes`);
        for (const text of [rules, ...others]) {
          if (/x{64}/.test(text) || text.includes('SLUICE_ADMIN') || text.includes(TOKEN)) {
            found.push(`${name}: the file's content came back`);
          }
        }
        // The error names the file, line and code, not the content.
        const { issues } = (JSON.parse(rules) as { config: { lastError: { issues: Record<string, unknown>[] } } })
          .config.lastError;
        assert.deepEqual(
          { code: issues[0]?.code, file: issues[0]?.file, line: issues[0]?.line },
          { code: 'ERR_SLUICE_RULES_WRONG_TYPE', file: bad, line: 1 },
          name,
        );
        if (name === '400 KB string' && !/got a string of 400000 characters/.test(String(issues[0]?.message))) {
          found.push(`${name}: the message does not say what the file is instead`);
        }
      }
    } finally {
      rmSync(bad, { force: true });
    }
    assert.deepEqual(found, []);
    assert.equal((await reload()).ok, true);
  });

  it('14: one key has a different mask under each policy, and the same one on every read', async () => {
    const key = 'api_key=guess-me';
    // The same key over its limit under two policies: a caller may choose any policy, its own included.
    for (const limit of [1, 2]) {
      const checks = Array.from({ length: limit + 1 }, () => ({ key, limit, period: '1h' }));
      const res = await fetch(`${base()}/v1/check`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ checks }),
      });
      assert.equal(res.status, 200);
    }
    const read = async () => {
      const body = (await (await fetch(`${base()}/api/top-keys?n=100`)).json()) as {
        keys: { rule: string; key: string; limit: number }[];
        keysMasked: boolean;
      };
      assert.equal(body.keysMasked, true);
      const masks = [1, 2].map((limit) => body.keys.find((k) => k.limit === limit)?.key);
      assert.ok(
        masks.every((m) => m?.startsWith('api_key=#')),
        JSON.stringify(body.keys),
      );
      assert.ok(!JSON.stringify(body).includes('guess-me'));
      return masks;
    };
    const [one, two] = await read();
    assert.notEqual(one, two, 'the same mask under two policies confirms a guess');
    assert.deepEqual(await read(), [one, two], 'masks are stable while the service runs');
  });

  it('15: the dashboard may not be framed by another site', async () => {
    for (const path of ['/', '/index.html', '/app.js', '/vendor/uPlot.esm.js']) {
      const res = await fetch(base() + path);
      await res.arrayBuffer();
      assert.equal(res.status, 200, path);
      assert.match(res.headers.get('content-security-policy') ?? '', /frame-ancestors 'none'/, path);
      assert.equal(res.headers.get('x-frame-options'), 'DENY', path);
      assert.equal(res.headers.get('x-content-type-options'), 'nosniff', path);
    }
  });

  it('12: keep-alive clients in a loop get `Connection: close` at shutdown, never a reset', async () => {
    writeFileSync(join(dir, 'drain.yaml'), GOOD);
    const own = await startSluice(['--config', join(dir, 'drain.yaml'), '--no-watch']);
    const routes = [
      { path: '/v1/check', body: JSON.stringify({ checks: [{ key: 'loop', limit: 1_000_000, period: '1h' }] }) },
      {
        path: '/json',
        body: JSON.stringify({ domain: 'probe', descriptors: [{ entries: [{ key: 'probe', value: 'p' }] }] }),
      },
    ];
    try {
      // Eight clients, each on one kept-alive connection, asking again as soon as answered.
      const loops = Array.from({ length: 8 }, (_, i) => keepAliveLoop(own.http, routes[i % 2] as Route));
      await Promise.all(loops.map((l) => l.warm));
      own.child.kill('SIGTERM');
      const outcomes = await Promise.all(loops.map((l) => l.done));
      for (const [i, o] of outcomes.entries()) {
        // The next connection is refused (the listener is closed): the client goes elsewhere, nothing lost.
        assert.equal(o.error, 'ECONNREFUSED', `client ${i} (${o.path}) after ${o.answers} answers: ${o.error}`);
        assert.equal(o.lastConnection, 'close', `client ${i} (${o.path}): its last answer kept the connection`);
      }
      assert.equal((await own.exited).code, 0);
    } finally {
      await own.stop();
    }
  });
});

interface Route {
  path: string;
  body: string;
}

/** One client on one kept-alive connection: resolves `warm` after 20 answers, `done` at its first error. */
function keepAliveLoop(port: number, route: Route) {
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  let warmed: () => void = () => {};
  const warm = new Promise<void>((resolve) => {
    warmed = resolve;
  });
  const done = (async () => {
    let answers = 0;
    let lastConnection: string | undefined;
    for (;;) {
      const outcome = await new Promise<{ connection?: string; error?: string }>((resolve) => {
        const req = httpRequest(
          {
            host: '127.0.0.1',
            port,
            path: route.path,
            method: 'POST',
            agent,
            headers: { 'content-type': 'application/json' },
          },
          (res) => {
            res.resume();
            res.on('end', () => resolve({ connection: res.headers.connection ?? '' }));
            res.on('error', (e: NodeJS.ErrnoException) => resolve({ error: e.code ?? e.message }));
          },
        );
        req.on('error', (e: NodeJS.ErrnoException) => resolve({ error: e.code ?? e.message }));
        req.end(route.body);
      });
      if (outcome.error !== undefined) {
        agent.destroy();
        warmed();
        return { path: route.path, answers, lastConnection, error: outcome.error };
      }
      answers++;
      lastConnection = outcome.connection;
      if (answers === 20) warmed();
    }
  })();
  return { warm, done };
}

describe('service minor abuse (issue 37: 11, RUNTIME_ROOT)', () => {
  it('11: after a swap of the RUNTIME_ROOT symlink, edits to the new target are loaded', async () => {
    const base = mkdtempSync(join(tmpdir(), 'sluice-runtime-swap-'));
    const rules = (version: string) => join(base, version, 'ratelimit', 'config');
    const write = (version: string, domain: string) =>
      writeFileSync(
        join(rules(version), 'rules.yaml'),
        `domain: ${domain}\ndescriptors:\n  - key: k\n    rate_limit: { unit: minute, requests_per_unit: 5 }\n`,
      );
    for (const version of ['v1', 'v2']) mkdirSync(rules(version), { recursive: true });
    write('v1', 'first');
    write('v2', 'swapped');
    symlinkSync(join(base, 'v1'), join(base, 'current'));
    const sluice = await startSluice(['--envoy-compat', '--log-level', 'info'], {
      RUNTIME_ROOT: join(base, 'current'),
      RUNTIME_SUBDIRECTORY: 'ratelimit',
    });
    const loaded = (domain: string) =>
      sluice.waitForLog(
        (r) => r.msg === 'config loaded' && (r.domains as string[] | undefined)?.includes(domain) === true,
        10_000,
      );
    try {
      // envoy's deploy: a new symlink renamed over the old one, atomically.
      symlinkSync(join(base, 'v2'), join(base, 'next'));
      renameSync(join(base, 'next'), join(base, 'current'));
      await loaded('swapped');
      write('v2', 'edited');
      await loaded('edited');
    } finally {
      await sluice.stop();
      rmSync(base, { recursive: true, force: true });
    }
  });
});
