// The allow and deny lists, through the admin API. The token lives in sessionStorage (gone when the tab
// closes) and travels only as `Authorization: Bearer`, never in a URL where logs and history keep it.
import { byId, fmtAgo, h, setRows, setText } from './dom.js';

const TOKEN_KEY = 'sluice.adminToken';
const REFRESH_MS = 5000;

function storedToken() {
  try {
    return sessionStorage.getItem(TOKEN_KEY) ?? '';
  } catch {
    return '';
  }
}

function storeToken(token) {
  try {
    if (token) sessionStorage.setItem(TOKEN_KEY, token);
    else sessionStorage.removeItem(TOKEN_KEY);
  } catch {
    // Storage can be disabled; the token then lasts as long as the page.
  }
}

/** The lists panel: token form, both lists with remove buttons, and the add form. */
export function createListsPanel() {
  let token = storedToken();
  let enabled;
  let lastFetch = 0;
  let inFlight = false;

  const form = byId('token-form');
  const input = /** @type {HTMLInputElement} */ (byId('token'));
  const forget = byId('token-forget');
  const status = byId('token-status');
  const body = byId('lists-body');
  const entryStatus = byId('entry-status');

  async function admin(method, path, payload) {
    const res = await fetch(`admin/${path}`, {
      method,
      headers: {
        authorization: `Bearer ${token}`,
        ...(payload === undefined ? {} : { 'content-type': 'application/json' }),
      },
      ...(payload === undefined ? {} : { body: JSON.stringify(payload) }),
      cache: 'no-store',
    });
    const json = await res.json().catch(() => ({}));
    if (!res.ok) {
      const error = new Error(json?.error?.message ?? `HTTP ${res.status}`);
      error.status = res.status;
      throw error;
    }
    return json;
  }

  async function refresh() {
    if (!token || inFlight) return;
    inFlight = true;
    lastFetch = Date.now();
    try {
      const lists = await admin('GET', 'lists');
      body.hidden = false;
      forget.hidden = false;
      setText(status, 'unlocked');
      status.dataset.state = 'ok';
      render('deny', lists.deny ?? []);
      render('allow', lists.allow ?? []);
    } catch (error) {
      body.hidden = true;
      setText(status, error.status === 403 || error.status === 401 ? 'the token was refused' : error.message);
      status.dataset.state = 'error';
      if (error.status === 403 || error.status === 401) {
        token = '';
        storeToken('');
        forget.hidden = true;
      }
    } finally {
      inFlight = false;
    }
  }

  function render(list, entries) {
    setText(byId(`${list}-count`), `(${entries.length})`);
    const rows = entries.map((e) =>
      h(
        'tr',
        { dataset: { testid: `${list}-entry`, value: e.value } },
        h('td', {}, h('code', {}, e.value)),
        h('td', {}, e.key ?? h('span', { class: 'muted' }, 'any')),
        h('td', {}, e.domain ?? h('span', { class: 'muted' }, 'any')),
        h('td', {}, e.note ?? ''),
        h('td', { class: 'muted', title: e.createdAt }, fmtAgo(e.createdAt)),
        h(
          'td',
          { class: 'num' },
          h(
            'button',
            {
              type: 'button',
              class: 'link danger',
              'aria-label': `Remove ${list} entry ${e.value}`,
              onclick: () => remove(list, e.id),
            },
            'remove',
          ),
        ),
      ),
    );
    if (rows.length === 0) rows.push(h('tr', {}, h('td', { colspan: 6, class: 'muted' }, 'no entries')));
    setRows(byId(`${list}-list`).querySelector('tbody'), rows);
  }

  async function remove(list, id) {
    try {
      await admin('DELETE', `lists/${list}/${encodeURIComponent(id)}`);
      setText(entryStatus, `removed from ${list}`);
    } catch (error) {
      setText(entryStatus, error.message);
    }
    await refresh();
  }

  form.addEventListener('submit', (event) => {
    event.preventDefault();
    token = input.value.trim();
    input.value = '';
    storeToken(token);
    setText(status, token ? 'checking…' : '');
    void refresh();
  });
  forget.addEventListener('click', () => {
    token = '';
    storeToken('');
    body.hidden = true;
    forget.hidden = true;
    setText(status, 'token forgotten');
    status.dataset.state = '';
  });

  byId('add-entry').addEventListener('submit', async (event) => {
    event.preventDefault();
    const value = (id) => /** @type {HTMLInputElement} */ (byId(id)).value.trim();
    const list = value('entry-list');
    const entry = { value: value('entry-value') };
    for (const [field, id] of [
      ['key', 'entry-key'],
      ['domain', 'entry-domain'],
      ['note', 'entry-note'],
    ]) {
      if (value(id) !== '') entry[field] = value(id);
    }
    try {
      await admin('POST', `lists/${list}`, entry);
      setText(entryStatus, `added to ${list}`);
      entryStatus.dataset.state = 'ok';
      for (const id of ['entry-value', 'entry-note']) /** @type {HTMLInputElement} */ (byId(id)).value = '';
    } catch (error) {
      setText(entryStatus, error.message);
      entryStatus.dataset.state = 'error';
    }
    await refresh();
  });

  return {
    /** Called on every poll with the service's state and the rules (for the add form's suggestions). */
    update(adminEnabled, rules) {
      if (adminEnabled !== enabled) {
        enabled = adminEnabled;
        byId('admin-off').hidden = adminEnabled;
        form.hidden = !adminEnabled;
        if (!adminEnabled) body.hidden = true;
      }
      const keys = [...new Set(rules.flatMap((r) => r.path.map((p) => p.key)))];
      const domains = [...new Set(rules.map((r) => r.domain))];
      fillDatalist('known-keys', keys);
      fillDatalist('known-domains', domains);
      if (adminEnabled && token && Date.now() - lastFetch >= REFRESH_MS) void refresh();
    },
  };
}

function fillDatalist(id, values) {
  const list = byId(id);
  if (list.dataset.values === values.join('\n')) return;
  list.dataset.values = values.join('\n');
  list.replaceChildren(...values.map((v) => h('option', { value: v })));
}
