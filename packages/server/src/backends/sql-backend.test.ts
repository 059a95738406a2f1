import { strict as assert } from 'node:assert';
import { Writable } from 'node:stream';
import { describe, it } from 'node:test';
import pino from 'pino';
import { isSluiceError } from 'sluice';
import { createLateProxy } from '../../../sluice/test/sql/late-proxy.js';
import { createSqlBackend, redactStoreUrl, sqliteTarget, sqlKind } from './sql-backend.js';

/** A logger whose messages can be awaited. */
function awaitableLogger() {
  const seen: string[] = [];
  const waiters: { msg: string; resolve: () => void }[] = [];
  const stream = new Writable({
    write(chunk, _encoding, done) {
      const msg = String(JSON.parse(String(chunk)).msg);
      seen.push(msg);
      for (const w of waiters.filter((x) => x.msg === msg)) w.resolve();
      done();
    },
  });
  const logged = (msg: string) =>
    seen.includes(msg) ? Promise.resolve() : new Promise<void>((resolve) => waiters.push({ msg, resolve }));
  return { logger: pino({ level: 'info' }, stream), logged };
}

describe('SQL backend of the service', () => {
  it(
    'a PostgreSQL not up at start: the store becomes ready once it is (health leaves starting)',
    { timeout: 30_000 },
    async () => {
      const proxy = await createLateProxy(5432);
      const { logger, logged } = awaitableLogger();
      const backend = await createSqlBackend(
        { url: `postgres://postgres@127.0.0.1:${proxy.port}/test`, connectTimeoutMs: 60_000, readyRetryMs: 1 },
        logger,
      );
      const store = backend.store as { isReady?: boolean };
      try {
        await logged('store not ready; starting degraded (the failure policy answers until it is)');
        assert.equal(store.isReady, false);
        await proxy.start();
        await logged('store ready');
        assert.equal(store.isReady, true);
      } finally {
        await backend.close();
        await proxy.stop();
      }
    },
  );
});

describe('redactStoreUrl', () => {
  it('hides the whole password, whatever it holds, and keeps the rest', () => {
    const cases: [string, string][] = [
      ['postgres://u:p@ss3cret@127.0.0.1:1/x', 'postgres://u:***@127.0.0.1:1/x'],
      ['postgres://u:a:b@c@db:5432/app?sslmode=require', 'postgres://u:***@db:5432/app?sslmode=require'],
      ['mysql://root:s3cret@db/app', 'mysql://root:***@db/app'],
      ['mysql://root@db/app?password=s3cret&ssl=1', 'mysql://root@db/app?password=***&ssl=1'],
      ['postgres://postgres@127.0.0.1:5432/test', 'postgres://postgres@127.0.0.1:5432/test'],
      ['sqlite:/var/lib/sluice.db', 'sqlite:/var/lib/sluice.db'],
    ];
    for (const [url, shown] of cases) assert.equal(redactStoreUrl(url), shown);
  });
});

describe('--store URLs', () => {
  it('a URL that cannot work is ERR_SLUICE_INVALID_OPTION naming --store, before anything opens', () => {
    const bad = [
      'sqlite:/no/such/folder/limits.db',
      'sqlite:?lockTimeoutMs=5',
      'sqlite:/tmp/limits.db?lockTimeoutMs=-1',
      'sqlite:/tmp/limits.db?lockTimeoutMs=ten',
      'sqlite:/tmp/limits.db?busy=5',
      'postgres://u:p@[::1/db',
      'postgres:///db',
      'mysql://root@db:99999/app',
    ];
    for (const url of bad)
      assert.throws(
        () => sqlKind(url),
        (e: unknown) =>
          isSluiceError(e, 'ERR_SLUICE_INVALID_OPTION') && e.option === 'store' && /^--store: /.test(e.message),
        url,
      );
  });

  it('sqlite:PATH?lockTimeoutMs=N sets how long a decision may wait for the write lock', () => {
    assert.deepEqual(sqliteTarget('sqlite:/tmp/limits.db?lockTimeoutMs=50'), {
      path: '/tmp/limits.db',
      lockTimeoutMs: 50,
    });
    assert.deepEqual(sqliteTarget('sqlite:///tmp/limits.db'), { path: '/tmp/limits.db' });
    for (const url of ['postgres://u:p%40ss@db:5432/app', 'mysql://root@127.0.0.1/test', 'sqlite::memory:'])
      assert.doesNotThrow(() => sqlKind(url), url);
  });
});
