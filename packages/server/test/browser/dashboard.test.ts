/**
 * The dashboard in a real browser: Debian's Chromium driven by playwright-core against the real
 * `sluice serve` process. Traffic goes in over `POST /json`; the page must show the config's rules,
 * moving per-second counters, an over-limit key in the top list, and a deny entry added from the page
 * must reject the next request.
 *
 * The screenshot is saved to `$TMPDIR/sluice-dashboard.png` (the path is printed); with
 * `SLUICE_UPDATE_DOCS=1` it also replaces `docs/dashboard.png`.
 */
import assert from 'node:assert/strict';
import { copyFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Browser, Page } from 'playwright-core';
import { type SluiceProcess, startSluice } from '../integration/helpers.js';
import { launchChromium, noChromium } from './chromium.js';

const TOKEN = 'dashboard-test-token-0123456789abcdef';
const root = resolve(import.meta.dirname, '..', '..');
const screenshot = join(tmpdir(), 'sluice-dashboard.png');

/** The service under test and its HTTP API's base URL. */
interface Service {
  readonly process: SluiceProcess;
  readonly url: string;
}

interface Descriptor {
  entries: { key: string; value: string }[];
}

/** `POST /json`; answers the HTTP status. */
async function ask(service: Service, domain: string, descriptors: Descriptor[]): Promise<number> {
  const res = await fetch(`${service.url}/json`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ domain, descriptors }),
  });
  await res.arrayBuffer();
  return res.status;
}

const entry = (key: string, value: string): Descriptor => ({ entries: [{ key, value }] });

/**
 * Steady, mixed traffic until stopped, about 90 requests/s: clients and API keys with a skewed spread
 * (a few busy, most quiet), one API key far over its limit (`key-hot`), shadowed searches and a client
 * hammering the login. The spread comes from a fixed-seed generator, so every run sends the same.
 */
function startTraffic(service: Service): { stop(): Promise<void>; sent(): number } {
  let running = true;
  let sent = 0;
  let seed = 42;
  const random = () => {
    seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648;
    return seed / 2_147_483_648;
  };
  const loop = (async () => {
    for (let round = 0; running; round++) {
      const batch: Promise<number>[] = [];
      for (let i = 0; i < 6; i++) {
        const ip = `198.51.100.${Math.floor(random() * 60)}`;
        const key = `key-${Math.floor(random() ** 2 * 24)}`;
        batch.push(ask(service, 'shop', [entry('remote_address', ip), entry('api_key', key)]));
      }
      batch.push(ask(service, 'shop', [entry('remote_address', '203.0.113.9'), entry('api_key', 'key-hot')]));
      batch.push(ask(service, 'shop', [entry('remote_address', '203.0.113.9'), entry('api_key', 'key-hot')]));
      batch.push(ask(service, 'shop', [{ entries: [{ key: 'path', value: '/search' }] }]));
      if (round % 2 === 0) {
        batch.push(
          ask(service, 'auth', [
            {
              entries: [
                { key: 'path', value: '/login' },
                { key: 'remote_address', value: '192.0.2.66' },
              ],
            },
          ]),
        );
      }
      const statuses = await Promise.all(batch);
      sent += statuses.length;
      await sleep(100);
    }
  })();
  return {
    async stop() {
      running = false;
      await loop;
    },
    sent: () => sent,
  };
}

/** The number shown in a chart card's counter (`data-testid`), for the rule `rule`. */
async function counter(page: Page, rule: string, testid: string): Promise<number> {
  const text = await page
    .locator(`[data-testid="chart-card"][data-rule="${rule}"] [data-testid="${testid}"]`)
    .textContent();
  return Number((text ?? '').replace(/,/g, ''));
}

describe('dashboard in Chromium', { skip: noChromium }, () => {
  let service: Service;
  let browser: Browser;
  const problems: string[] = [];

  before(async () => {
    const [sluice, launched] = await Promise.all([
      startSluice(['--config', join(root, 'test/browser/config'), '--no-watch'], { SLUICE_ADMIN_TOKEN: TOKEN }),
      launchChromium(),
    ]);
    service = { process: sluice, url: `http://127.0.0.1:${sluice.http}` };
    browser = launched;
  });

  after(async () => {
    await browser?.close();
    const exit = await service?.process.stop();
    assert.equal(exit?.code, 0, 'the service exits 0 on SIGTERM after serving the dashboard');
  });

  it('shows rules, live counters and top keys, and edits the deny list', { timeout: 90_000 }, async () => {
    const traffic = startTraffic(service);
    try {
      const page = await browser.newPage({ viewport: { width: 1440, height: 900 } });
      page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
      page.on('console', (message) => {
        if (message.type() === 'error' || message.type() === 'warning') problems.push(`console: ${message.text()}`);
      });
      // Nothing may be fetched from anywhere but the service.
      page.on('request', (request) => {
        if (!request.url().startsWith(service.url) && !request.url().startsWith('data:')) {
          problems.push(`external request: ${request.url()}`);
        }
      });
      await page.goto(service.url, { waitUntil: 'domcontentloaded' });

      // The rules table shows the config: every rule, grouped by domain, with limits and algorithms.
      const rules = page.locator('[data-testid="rule-row"]');
      await rules.first().waitFor();
      assert.equal(await rules.count(), 4);
      const table = await page.locator('#rules').innerText();
      for (const text of [
        'per-ip',
        '20 / second (burst 40)',
        'token-bucket',
        'per-key',
        '120 / minute',
        'sliding-window',
        'path=/search',
        'shadow',
        'login',
        'sliding-log',
        'path=/login/remote_address',
        'shop.yaml:',
      ]) {
        assert.ok(table.includes(text), `the rules table shows "${text}":\n${table}`);
      }
      assert.match(await page.locator('#config-source').innerText(), /2 files/);
      assert.equal(await page.locator('#adaptive').isVisible(), false, 'no adaptive panel without --adaptive');

      // The chart's counters move: the 5-minute total of per-ip grows while traffic flows.
      const card = page.locator('[data-testid="chart-card"][data-rule="shop|remote_address"]');
      await card.waitFor();
      const first = await counter(page, 'shop|remote_address', 'allowed-total');
      await page.waitForFunction(
        (before) => {
          const el = document.querySelector(
            '[data-testid="chart-card"][data-rule="shop|remote_address"] [data-testid="allowed-total"]',
          );
          return Number((el?.textContent ?? '').replace(/,/g, '')) > before + 50;
        },
        first,
        { timeout: 10_000 },
      );
      assert.ok((await counter(page, 'shop|remote_address', 'allowed-now')) > 0, 'allowed/s is above 0');
      assert.equal(await card.locator('canvas').count(), 1, 'the chart is drawn');

      // An over-limit key appears in the top list, its value masked: the page has no admin token yet. (It
      // takes key-hot over 120 requests a minute: allow for a busy machine slowing the traffic.)
      const masked = page.locator('[data-testid="top-key"][data-key^="api_key=#"][data-over="true"]');
      await masked.first().waitFor({ timeout: 30_000 });
      assert.equal(await page.locator('[data-testid="top-key"][data-key="api_key=key-hot"]').count(), 0);

      // A deny entry added from the page, with the admin token, rejects the next request.
      const blocked = [entry('remote_address', '198.51.100.200'), entry('api_key', 'leaked-key')];
      assert.equal(await ask(service, 'shop', blocked), 200);
      assert.equal(await page.locator('#lists-body').isVisible(), false, 'the lists need the token');
      await page.fill('#token', TOKEN);
      await page.click('#token-form button[type="submit"]');
      await page.locator('#lists-body').waitFor();
      assert.equal(
        await page.evaluate(() => sessionStorage.getItem('sluice.adminToken')),
        TOKEN,
        'the token is kept in sessionStorage',
      );

      // With the token, the top list shows keys as they are.
      const hot = page.locator('[data-testid="top-key"][data-key="api_key=key-hot"][data-over="true"]');
      await hot.waitFor({ timeout: 30_000 });
      assert.match(await hot.innerText(), /over limit/);
      assert.ok((await counter(page, 'shop|api_key', 'over-total')) > 0, 'per-key counts rejections');
      await page.locator('[data-testid="top-key"][data-key="path=/login/remote_address=192.0.2.66"]').waitFor({
        timeout: 10_000,
      });

      // "why" on the over-limit key: the page asks POST /admin/explain with the token and shows the answer.
      await hot.locator('button[data-why]').click();
      const verdict = page.locator('#why [data-testid="why-verdict"]');
      await verdict.waitFor({ timeout: 10_000 });
      assert.match(await verdict.innerText(), /^OVER_LIMIT — decided by: over-limit$/);
      const described = page.locator('#why [data-testid="why-descriptor"][data-outcome="limited"]');
      assert.match(await described.locator('[data-testid="why-walk"]').innerText(), /api_key=key-hot → api_key/);
      assert.match(await described.locator('[data-testid="why-rule"]').innerText(), /rule: api_key \(.+:\d+\)/);
      const binding = described.locator('[data-testid="why-limit"][data-binding="true"]');
      assert.equal(await binding.count(), 1, 'one limit binds');
      assert.match(await binding.innerText(), /120 per .*: 0 left, resets in .*refuses.*binding/s);
      await page.click('#why-close');

      await page.selectOption('#entry-list', 'deny');
      await page.fill('#entry-value', 'leaked-key');
      await page.fill('#entry-key', 'api_key');
      await page.fill('#entry-note', 'leaked on a forum');
      await page.click('#add-entry button[type="submit"]');
      await page.locator('[data-testid="deny-entry"][data-value="leaked-key"]').waitFor();
      assert.equal(await ask(service, 'shop', blocked), 429);
      assert.equal(await ask(service, 'shop', [entry('api_key', 'key-1')]), 200, 'other keys still pass');
      assert.ok(page.url().startsWith(service.url) && !page.url().includes(TOKEN), 'the token is not in the URL');

      // A few more seconds of traffic so the picture shows some history, then the screenshot.
      await page.locator('[data-testid="chart-card"][data-rule="list:deny"]').waitFor({ timeout: 5000 });
      await sleep(2500);
      await page.screenshot({ path: screenshot, fullPage: true });
      console.log(`screenshot: ${screenshot} (${traffic.sent()} requests sent)`);
      if (process.env.SLUICE_UPDATE_DOCS === '1') copyFileSync(screenshot, join(root, 'docs/dashboard.png'));

      // Keys are chosen by clients: markup in one shows as text and never runs (after the screenshot, to keep
      // the picture tidy).
      const hostile = '<img src=x onerror="window.__sluiceXss=1">';
      const login = {
        entries: [
          { key: 'path', value: '/login' },
          { key: 'remote_address', value: hostile },
        ],
      };
      for (let i = 0; i < 6; i++) await ask(service, 'auth', [login]);
      const shown = page.locator(
        `[data-testid="top-key"][data-key="path=/login/remote_address=${hostile.replace(/"/g, '\\"')}"] code`,
      );
      await shown.waitFor({ timeout: 5000 });
      assert.equal(await shown.textContent(), `path=/login/remote_address=${hostile}`);
      assert.equal(await page.locator('#top-keys img').count(), 0);
      assert.equal(await page.evaluate(() => (window as { __sluiceXss?: number }).__sluiceXss), undefined);
      assert.deepEqual(problems, [], 'no page errors, console errors or external requests');
    } finally {
      await traffic.stop();
    }
  });
});
