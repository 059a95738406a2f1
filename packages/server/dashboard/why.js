// The "why" drill-down of a top key: asks POST /admin/explain (admin token) what the next request of that key
// would be decided, and shows the verdict, the rule path walked, each limit's counter and which one binds.
import { byId, fmtDuration, fmtInt, h, setText } from './dom.js';

const TOKEN_KEY = 'sluice.adminToken';

/**
 * A counted key (`k=v/k=v`, values as sent) split into the rule path's entries: each value runs to the next
 * `/key=` of the path. Undefined when the key does not follow the path (a `/v1/check` key, a masked key).
 */
export function entriesOf(key, path) {
  const entries = [];
  let rest = key;
  for (let i = 0; i < path.length; i++) {
    const prefix = `${path[i].key}=`;
    if (!rest.startsWith(prefix)) return undefined;
    rest = rest.slice(prefix.length);
    const next = path[i + 1];
    const end = next === undefined ? rest.length : rest.indexOf(`/${next.key}=`);
    if (end === -1) return undefined;
    entries.push({ key: path[i].key, value: rest.slice(0, end) });
    rest = rest.slice(end + 1);
  }
  return entries;
}

/** The "why" panel: a click on a top key's button (delegated on the table) explains that key. */
export function createWhyPanel() {
  const panel = byId('why');
  const body = byId('why-body');
  const title = byId('why-title');
  let rules = [];
  let asked = 0;

  byId('why-close').addEventListener('click', () => {
    panel.hidden = true;
  });
  byId('top-keys').addEventListener('click', (event) => {
    const button = event.target instanceof Element ? event.target.closest('button[data-why]') : null;
    if (button instanceof HTMLElement) void explain(button.dataset.domain, button.dataset.rule, button.dataset.key);
  });

  async function explain(domain, ruleId, key) {
    const rule = rules.find((r) => r.domain === domain && r.id === ruleId);
    const entries = rule && entriesOf(key, rule.path);
    panel.hidden = false;
    setText(title, key);
    if (entries === undefined) return body.replaceChildren(h('p', { class: 'muted' }, 'this key cannot be explained'));
    const token = sessionStorage.getItem(TOKEN_KEY);
    if (!token) return body.replaceChildren(h('p', { class: 'muted' }, 'enter the admin token to explain keys'));
    const mine = ++asked;
    body.replaceChildren(h('p', { class: 'muted' }, 'asking…'));
    try {
      const res = await fetch('admin/explain', {
        method: 'POST',
        cache: 'no-store',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
        body: JSON.stringify({ domain, descriptors: [{ entries }] }),
      });
      const answer = await res.json();
      if (mine !== asked) return;
      if (!res.ok) throw new Error(answer?.error?.message ?? `HTTP ${res.status}`);
      body.replaceChildren(...renderAnswer(answer));
    } catch (error) {
      if (mine === asked)
        body.replaceChildren(h('p', { class: 'over' }, error instanceof Error ? error.message : 'failed'));
    }
  }

  return {
    /** The rules in force, to split keys into descriptor entries. */
    setRules(next) {
      rules = next;
    },
  };
}

/** The explain answer as nodes: the verdict, then per descriptor its walk, rule and counters. */
function renderAnswer(answer) {
  const out = [
    h(
      'p',
      { dataset: { testid: 'why-verdict' } },
      h('strong', {}, answer.overallCode),
      ` — decided by: ${answer.verdict}`,
    ),
  ];
  for (const domain of answer.domains ?? []) {
    for (const d of domain.descriptors ?? []) out.push(renderDescriptor(d));
  }
  return out;
}

function renderDescriptor(d) {
  const walk = (d.steps ?? []).map((s) => `${s.key}=${s.value} → ${s.rule ?? '—'} (${s.matchedBy ?? 'no match'})`);
  const limits = (d.limits ?? []).map((l) =>
    h(
      'li',
      { dataset: { testid: 'why-limit', binding: String(Boolean(l.binding)) } },
      `${l.name ? `${l.name}: ` : ''}${fmtInt(l.limit)} per ${fmtDuration(l.periodMs)} (${l.algorithm}): `,
      `${fmtInt(l.remaining)} left, resets in ${fmtDuration(l.resetMs)}`,
      l.allowed === false ? h('span', { class: 'tag over' }, 'refuses') : null,
      l.binding ? h('span', { class: 'tag' }, 'binding') : null,
    ),
  );
  return h(
    'div',
    { class: 'why-descriptor', dataset: { testid: 'why-descriptor', outcome: d.outcome } },
    h('p', {}, 'outcome: ', h('strong', {}, d.outcome)),
    walk.length > 0 ? h('p', { dataset: { testid: 'why-walk' } }, 'walk: ', walk.join(' / ')) : null,
    d.why ? h('p', { class: 'muted' }, d.why) : null,
    d.rule
      ? h(
          'p',
          { dataset: { testid: 'why-rule' } },
          'rule: ',
          h('code', {}, d.rule.descriptor),
          ` (${d.rule.file}:${d.rule.line})`,
        )
      : null,
    limits.length > 0 ? h('ul', {}, ...limits) : null,
  );
}
