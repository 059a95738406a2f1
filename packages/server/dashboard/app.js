// sluice dashboard: polls GET /api/dashboard once a second and renders it. No build step, no framework;
// the only library is uPlot, served by the service itself.
import { renderAdaptive } from './adaptive.js';
import { createCharts } from './charts.js';
import { byId, fmtClock, setText } from './dom.js';
import { createListsPanel } from './lists.js';
import { renderRegions } from './regions.js';
import { createDescriber, renderCards, renderRules, renderTopKeys } from './tables.js';
import { createWhyPanel } from './why.js';

const POLL_MS = 1000;
const RETRY_MS = 2000;

const charts = createCharts();
const describe = createDescriber();
const lists = createListsPanel();
const why = createWhyPanel();
const live = byId('live');
let rulesVersion;

async function poll() {
  const since = charts.since();
  // With the admin token (kept for this tab by the lists panel) the top keys come unmasked.
  const token = sessionStorage.getItem('sluice.adminToken');
  const res = await fetch(`api/dashboard${since === undefined ? '' : `?since=${since}`}`, {
    cache: 'no-store',
    headers: token ? { authorization: `Bearer ${token}` } : {},
  });
  if (!res.ok) throw new Error(`HTTP ${res.status}`);
  const data = await res.json();

  // The rules change only on a (re)load: rebuild the table then, and refresh its "now" column always.
  const version = `${data.config.loadedAt}|${data.rules.length}`;
  if (version !== rulesVersion) {
    rulesVersion = version;
    describe.setRules(data.rules);
    why.setRules(data.rules);
  }
  charts.update(data.stats, describe);
  renderRules(data.rules, data.config, charts);
  renderTopKeys(data.topKeys, data.trackedKeys, describe);
  renderCards(data, charts);
  renderRegions(data.service.regions);
  renderAdaptive(data.adaptive, data.now);
  lists.update(data.service.adminEnabled, data.rules);

  live.dataset.state = 'live';
  setText(live, 'live');
  document.body.dataset.updatedAt = String(data.now);
}

async function loop() {
  let delay = POLL_MS;
  try {
    await poll();
  } catch (error) {
    live.dataset.state = 'down';
    setText(live, `disconnected · retrying (${error instanceof Error ? error.message : 'error'})`);
    setText(byId('updated'), `last try ${fmtClock(Date.now())}`);
    delay = RETRY_MS;
  }
  setTimeout(loop, delay);
}

void loop();
