/** The dashboard's adaptive panel data: the gateway's adaptive limit (`--adaptive`) as plain, bounded figures. */
import type { AdaptiveStats, PriorityFigures } from 'sluice/adaptive';

/** What `GET /api/dashboard` answers as `adaptive` (null when the gateway runs without `--adaptive`). */
export interface AdaptiveView {
  algorithm: string;
  limit: number;
  inFlight: number;
  queued: number;
  /** Most important first; admitted and shed count since the start. */
  priorities: (PriorityFigures & { name: string })[];
}

/** Most priorities shown: the limiter takes 16 at most; the bound keeps the answer small whatever it holds. */
export const MAX_ADAPTIVE_PRIORITIES = 16;

/** The view of `stats` (or null without one). */
export function adaptiveView(stats: AdaptiveStats | undefined): AdaptiveView | null {
  if (stats === undefined) return null;
  return {
    algorithm: stats.algorithm,
    limit: stats.limit,
    inFlight: stats.inFlight,
    queued: stats.queued,
    priorities: Object.entries(stats.priorities)
      .slice(0, MAX_ADAPTIVE_PRIORITIES)
      // The figures named one by one: nothing else the stats may carry goes out.
      .map(([name, { share, guaranteed, inFlight, queued, admitted, shed }]) => ({
        name,
        share,
        guaranteed,
        inFlight,
        queued,
        admitted,
        shed,
      })),
  };
}
