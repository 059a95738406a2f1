// The regions card: shown only when the service runs in one region of several (sluice serve --region):
// this region's share of the limits (escrow) and, per peer region, the sync lag.
import { byId, h, setText } from './dom.js';

const seconds = (ms) => (ms === null || ms === undefined ? '–' : `${(ms / 1000).toFixed(ms < 10_000 ? 2 : 0)} s`);

/** @param {undefined | { region: string, mode: string, share: number | null, peers: { region: string, syncAgoMs: number | null, lagMs: number | null, pendingKeys: number, down: boolean }[] }} view */
export function renderRegions(view) {
  const card = byId('card-regions');
  card.hidden = view === undefined || view === null;
  if (card.hidden) return;
  const share = view.share === null ? view.mode : `${view.mode} · share ${Math.round(view.share * 100)} %`;
  setText(byId('regions-here'), `${view.region} · ${share}`);
  const list = byId('regions-peers');
  list.replaceChildren(
    ...view.peers.map((p) =>
      h(
        'li',
        { dataset: { region: p.region, down: String(p.down) } },
        `${p.region}: ${p.down ? 'unreachable' : `lag ${seconds(p.lagMs)}`} · synced ${seconds(p.syncAgoMs)} ago`,
        p.pendingKeys > 0 ? ` · ${p.pendingKeys} keys waiting` : '',
      ),
    ),
  );
}
