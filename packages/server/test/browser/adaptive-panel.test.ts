/**
 * The dashboard's adaptive panel in Chromium, against a real `sluice serve --upstream … --adaptive aimd` in front
 * of a slow upstream (every answer 300 ms late): a flood on no route (batch) and a trickle on the critical
 * route; the panel must show batch's shed count rising while critical's requests are admitted, none shed.
 *
 * The panel's screenshot is saved to `$TMPDIR/sluice-adaptive-panel.png` (the path is printed); with
 * `SLUICE_UPDATE_DOCS=1` it also replaces `docs/dashboard-adaptive.png`.
 */
import assert from 'node:assert/strict';
import { copyFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { adaptiveGatewayArgs } from '../integration/adaptive-gateway.js';
import { type SluiceProcess, startSluice, tempFile } from '../integration/helpers.js';
import { launchChromium, noChromium } from './chromium.js';

const RULES = `domain: shop
http:
  priorities:
    - { path_prefix: /checkout, method: POST, priority: critical }
  rate_limits:
    - actions: [{ generic_key: { descriptor_value: everyone } }]
descriptors:
  - { key: generic_key, value: everyone, rate_limit: { unit: day, requests_per_unit: 100000000 } }
`;
const screenshot = join(tmpdir(), 'sluice-adaptive-panel.png');
const root = resolve(import.meta.dirname, '..', '..', '..', '..');

/** `workers` loops sending `method path` one after another until stopped; counts the statuses. */
function load(url: string, method: string, workers: number) {
  let running = true;
  const statuses = new Map<number, number>();
  const loops = Array.from({ length: workers }, async () => {
    while (running) {
      const status = await fetch(url, { method })
        .then(async (res) => {
          await res.arrayBuffer();
          return res.status;
        })
        .catch(() => 0);
      statuses.set(status, (statuses.get(status) ?? 0) + 1);
      // A shed request comes back at once: a short pause keeps the flood from spinning the machine.
      if (status === 503) await new Promise((r) => setTimeout(r, 20));
    }
  });
  return {
    statuses,
    async stop() {
      running = false;
      await Promise.all(loops);
    },
  };
}

/** A figure of the panel's row for `priority` (`data-testid`), as a number. */
async function figure(page: Page, priority: string, testid: string): Promise<number> {
  const text = await page
    .locator(`[data-testid="adaptive-row"][data-priority="${priority}"] [data-testid="${testid}"]`)
    .textContent();
  return Number((text ?? '').replace(/,/g, ''));
}

describe('dashboard adaptive panel in Chromium', { skip: noChromium, timeout: 120_000 }, () => {
  const upstream = createServer((req, res) => {
    req.resume();
    setTimeout(() => res.end('ok'), 300);
  });
  let sluice: SluiceProcess;
  let config: ReturnType<typeof tempFile>;
  let browser: Browser;

  before(async () => {
    await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
    config = tempFile('shop.yaml', RULES);
    const port = (upstream.address() as AddressInfo).port;
    [sluice, browser] = await Promise.all([startSluice(adaptiveGatewayArgs(config.path, port)), launchChromium()]);
  });
  after(async () => {
    await browser?.close();
    const exit = await sluice?.stop();
    upstream.closeAllConnections();
    await new Promise((r) => upstream.close(r));
    config?.remove();
    assert.equal(exit?.code, 0);
  });

  it('shows batch shed rising while critical is admitted', async () => {
    const gateway = `http://127.0.0.1:${sluice.proxy}`;
    // 80 batch loops against a limit of about 20: most of them shed; 3 critical loops, within critical's share.
    const batch = load(`${gateway}/reports/export`, 'GET', 80);
    const critical = load(`${gateway}/checkout`, 'POST', 3);
    const problems: string[] = [];
    try {
      const page = await browser.newPage({ viewport: { width: 1440, height: 900 } });
      page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
      page.on('console', (message) => {
        if (message.type() === 'error' || message.type() === 'warning') problems.push(`console: ${message.text()}`);
      });
      await page.goto(`http://127.0.0.1:${sluice.http}`, { waitUntil: 'domcontentloaded' });
      const panel = page.locator('#adaptive');
      await panel.waitFor({ state: 'visible', timeout: 15_000 });
      assert.match(await panel.innerText(), /aimd/);
      assert.deepEqual(
        await page.locator('[data-testid="adaptive-row"]').evaluateAll((rows) => rows.map((r) => r.dataset.priority)),
        ['critical', 'normal', 'batch'],
      );
      // Batch's shed count rises from one poll to a later one while critical's admitted count rises too.
      const shed = await figure(page, 'batch', 'adaptive-shed');
      const admitted = await figure(page, 'critical', 'adaptive-admitted');
      // (Read from here, a poll every 200 ms: the page updates once a second.)
      for (let i = 0; ; i++) {
        const risen =
          (await figure(page, 'batch', 'adaptive-shed')) > shed + 50 &&
          (await figure(page, 'critical', 'adaptive-admitted')) > admitted + 5;
        if (risen) break;
        if (i > 150) assert.fail(`the panel's counts did not rise: ${await panel.innerText()}`);
        await new Promise((r) => setTimeout(r, 200));
      }
      assert.equal(await figure(page, 'critical', 'adaptive-shed'), 0, 'no critical request shed');
      assert.ok((await figure(page, 'batch', 'adaptive-in-flight')) > 0, 'batch holds places too');
      await page.locator('[data-testid="adaptive-row"][data-priority="batch"][data-shedding="true"]').waitFor();
      assert.ok(Number((await page.locator('#adaptive-limit').textContent()) ?? '') >= 1);
      await panel.screenshot({ path: screenshot });
      console.log(`screenshot: ${screenshot}`);
      if (process.env.SLUICE_UPDATE_DOCS === '1') copyFileSync(screenshot, join(root, 'docs/dashboard-adaptive.png'));
    } finally {
      await Promise.all([batch.stop(), critical.stop()]);
    }
    assert.equal(critical.statuses.get(503) ?? 0, 0, `critical answers: ${[...critical.statuses]}`);
    assert.ok(
      (batch.statuses.get(503) ?? 0) > 0 && (batch.statuses.get(200) ?? 0) > 0,
      `batch: ${[...batch.statuses]}`,
    );
    assert.deepEqual(problems, [], 'no page errors or console errors');
  });
});
