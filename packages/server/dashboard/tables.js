// The status cards, the rules table and the top-keys table.
import { byId, fmtAgo, fmtClock, fmtDuration, fmtInt, fmtLatency, fmtRate, h, setRows, setText } from './dom.js';

const UNIT_NAMES = { SECOND: 'second', MINUTE: 'minute', HOUR: 'hour', DAY: 'day', WEEK: 'week', MONTH: 'month' };

/** `10 / second`, `5 / 1m` */
export function limitText(limit) {
  const per = limit.unit ? (UNIT_NAMES[limit.unit] ?? limit.unit.toLowerCase()) : fmtDuration(limit.periodMs);
  const burst =
    limit.burst !== undefined && limit.burst !== limit.requestsPerUnit ? ` (burst ${fmtInt(limit.burst)})` : '';
  return `${fmtInt(limit.requestsPerUnit)} / ${per}${burst}`;
}

/**
 * How to name and order a series: config rules by their place in the config, then access lists,
 * unmatched descriptors and `/v1/check` policies.
 */
export function createDescriber() {
  let byId = new Map();
  let order = new Map();
  return {
    setRules(rules) {
      byId = new Map(rules.map((r) => [r.id, r]));
      order = new Map(rules.map((r, i) => [`${r.domain}\u0000${r.id}`, i]));
    },
    order(col) {
      const i = order.get(`${col.domain}\u0000${col.rule}`);
      if (i !== undefined) return i;
      if (col.rule.startsWith('list:')) return 10_000;
      if (col.rule === '(none)') return 10_001;
      return col.domain === '' ? 20_000 : 10_002;
    },
    label(col) {
      const rule = byId.get(col.rule);
      if (rule !== undefined) {
        const limits = rule.limits.map(limitText).join(' + ');
        return {
          title: rule.name ?? rule.descriptor,
          subtitle: `${rule.domain} · ${rule.descriptor}${limits ? ` · ${limits}` : ''}${rule.shadow ? ' · shadow' : ''}`,
        };
      }
      if (col.rule === 'list:deny')
        return { title: 'Deny list', subtitle: `${col.domain || '/v1/check'} · entries that reject` };
      if (col.rule === 'list:allow')
        return { title: 'Allow list', subtitle: `${col.domain || '/v1/check'} · entries that admit` };
      if (col.rule === '(none)')
        return { title: 'No matching rule', subtitle: `${col.domain} · descriptors no rule limits` };
      if (col.rule === '(other)')
        return { title: 'Other rules', subtitle: `${col.domain || '/v1/check'} · past the tracked-rule cap` };
      if (col.domain === '') return { title: `/v1/check ${col.rule}`, subtitle: 'config-less checks with this policy' };
      return { title: col.rule, subtitle: `${col.domain} · no longer in the config` };
    },
  };
}

/** Fills the five status cards. */
export function renderCards(data, charts) {
  const { service, config, lists } = data;
  const health = service.health ?? {};
  setText(byId('store-name'), service.store === 'memory' ? 'memory' : service.store);
  const status = byId('store-status');
  const reachable = health.storeReachable !== false;
  const state = health.status ?? (reachable ? 'ok' : 'unavailable');
  setText(status, `${state}${reachable ? ' · connected' : ' · unreachable'}`);
  status.dataset.state = state;

  const latency = service.latency;
  setText(byId('latency-p99'), latency ? fmtLatency(latency.p99Ms) : '–');
  setText(
    byId('latency-detail'),
    latency && latency.calls > 0
      ? `p50 ${fmtLatency(latency.p50Ms)} · ${fmtInt(latency.calls)} calls${latency.errors ? ` · ${fmtInt(latency.errors)} errors` : ''}`
      : 'no store calls yet',
  );
  setText(byId('latency-window'), latency && latency.windowS > 0 ? `(last ${latency.windowS} s)` : '');

  const now = charts.lastSecond();
  setText(byId('rate-total'), fmtRate(now.allowed + now.over + now.shadow));
  setText(
    byId('rate-detail'),
    `${fmtRate(now.allowed)} allowed · ${fmtRate(now.over)} over limit${now.shadow ? ` · ${fmtRate(now.shadow)} shadow` : ''}`,
  );

  setText(
    byId('config-source'),
    config.source === 'example'
      ? 'built-in example'
      : `${config.files.length} file${config.files.length === 1 ? '' : 's'}`,
  );
  setText(byId('config-loaded'), `loaded ${fmtClock(config.loadedAt)} (${fmtAgo(config.loadedAt, data.now)})`);
  byId('config-loaded').title = config.files.join('\n');

  setText(byId('lists-count'), `${fmtInt(lists.deny)} deny · ${fmtInt(lists.allow)} allow`);
  setText(byId('lists-admin'), service.adminEnabled ? 'editable with the admin token' : 'admin API off');

  const banner = byId('config-error');
  const error = config.lastError;
  if (error === undefined) {
    banner.hidden = true;
  } else {
    banner.hidden = false;
    banner.replaceChildren(
      h('strong', {}, `The last config reload failed (${fmtClock(error.at)}); the previous rules stay in force.`),
      h(
        'ul',
        {},
        ...error.issues.map((i) =>
          h('li', {}, h('code', {}, `${i.file}:${i.line}:${i.column}`), ` ${i.code} — ${i.message}`),
        ),
      ),
    );
  }
  setText(byId('updated'), `updated ${fmtClock(data.now)}`);
}

/** The rules in force, grouped by domain, with the current per-second rate of each. */
export function renderRules(rules, config, charts) {
  const rows = [];
  let domain;
  for (const r of rules) {
    if (r.domain !== domain) {
      domain = r.domain;
      rows.push(
        h('tr', { class: 'group' }, h('th', { colspan: 7, scope: 'rowgroup' }, 'domain ', h('code', {}, r.domain))),
      );
    }
    const flags = [
      r.shadow && h('span', { class: 'tag shadow' }, 'shadow'),
      r.unlimited && h('span', { class: 'tag' }, 'unlimited'),
      r.allowListed && h('span', { class: 'tag ok' }, 'allow-listed'),
      r.fail && h('span', { class: 'tag' }, `fail ${r.fail}`),
    ];
    const now = charts.nowOf(r.domain, r.id);
    rows.push(
      h(
        'tr',
        { dataset: { testid: 'rule-row', rule: r.id } },
        h('td', {}, h('code', {}, r.descriptor)),
        h('td', {}, r.name ?? ''),
        h('td', {}, ...r.limits.flatMap((l, i) => [i > 0 ? h('br') : null, limitText(l)])),
        h('td', {}, ...r.limits.flatMap((l, i) => [i > 0 ? h('br') : null, l.algorithm])),
        h('td', {}, ...flags),
        h(
          'td',
          { class: 'num' },
          now === undefined
            ? h('span', { class: 'muted' }, '–')
            : h(
                'span',
                {},
                fmtRate(now.allowed),
                now.over ? h('span', { class: 'over' }, ` / ${fmtRate(now.over)} over`) : '',
              ),
        ),
        h('td', { class: 'muted', title: `${r.file}:${r.line}` }, `${baseName(r.file)}:${r.line}`),
      ),
    );
  }
  setRows(byId('rules').querySelector('tbody'), rows);
  const domains = new Set(rules.map((r) => r.domain)).size;
  setText(
    byId('rules-meta'),
    `· ${rules.length} rule${rules.length === 1 ? '' : 's'} in ${domains} domain${domains === 1 ? '' : 's'}${config.source === 'example' ? ' · built-in example' : ''}`,
  );
}

/** The keys closest to or over their limits. */
export function renderTopKeys(keys, trackedKeys, describe) {
  const rows = keys.map((k) => {
    const pct = Math.round(k.used * 100);
    const label = describe.label({ domain: k.domain, rule: k.rule });
    const state = k.over ? 'over' : k.used >= 0.8 ? 'near' : 'ok';
    return h(
      'tr',
      { class: `state-${state}`, dataset: { testid: 'top-key', key: k.key, over: String(k.over) } },
      h(
        'td',
        {},
        h('code', { class: 'key' }, k.key || '(empty)'),
        k.over ? h('span', { class: 'tag over' }, k.shadow ? 'over (shadow)' : 'over limit') : null,
      ),
      h('td', { title: label.subtitle }, label.title),
      h(
        'td',
        { class: 'col-used' },
        h('span', { class: 'bar' }, barFill(pct, state)),
        h('span', { class: 'bar-text' }, `${pct}% of ${fmtInt(k.limit)}`),
      ),
      h('td', { class: 'num' }, fmtInt(k.remaining)),
      h('td', { class: 'num' }, fmtDuration(k.resetInMs)),
      h('td', { class: 'num' }, k.rejected ? fmtInt(k.rejected) : ''),
      h('td', { class: 'num muted' }, k.lastSeenMsAgo < 1000 ? 'now' : `${fmtDuration(k.lastSeenMsAgo)} ago`),
      h(
        'td',
        {},
        h(
          'button',
          { type: 'button', class: 'why-button', dataset: { why: '', domain: k.domain, rule: k.rule, key: k.key } },
          'why',
        ),
      ),
    );
  });
  setRows(byId('top-keys').querySelector('tbody'), rows);
  byId('top-empty').hidden = keys.length > 0;
  setText(byId('top-meta'), `· top ${keys.length} of ${fmtInt(trackedKeys)} tracked`);
}

function barFill(pct, state) {
  const fill = h('span', { class: `bar-fill ${state}` });
  // CSSOM, not a style attribute: allowed by the page's Content-Security-Policy.
  fill.style.width = `${Math.min(100, Math.max(2, pct))}%`;
  return fill;
}

/** The file name of a path (the full path shows on hover). */
function baseName(path) {
  return path.split(/[\\/]/).pop() || path;
}
