/**
 * What `sluice serve --capture` costs the service's decisions: the service's decider (allow/deny lists, the rules
 * engine over the memory store, metrics) asked back to back without capture, with a 1 % sample and with every
 * decision captured, in alternating rounds of one run (medians); records go to a real directory.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Registry } from 'prom-client';
import { startServiceCapture } from '../../packages/server/src/app/service-capture.js';
import { createAccessLists } from '../../packages/server/src/core/access-lists.js';
import { createDecider, type Decider } from '../../packages/server/src/core/decide.js';
import { createDecisionHub } from '../../packages/server/src/observability/decision-events.js';
import { createLogger } from '../../packages/server/src/observability/logger.js';
import { createMetrics } from '../../packages/server/src/observability/metrics.js';
import { createMemoryStore, systemClock } from '../../packages/sluice/src/index.js';
import { createRulesEngine, parseRules } from '../../packages/sluice/src/rules/index.js';

const RULES =
  'domain: api\ndescriptors:\n  - key: user\n    rate_limit:\n      unit: minute\n      requests_per_unit: 1000\n';
const KEYS = 50_000;
const PER_ROUND = 200_000;
const ROUNDS = 7;

/** Decisions per second of each configuration, and the capture's counts. */
export interface CaptureCost {
  readonly rates: Readonly<Record<'off' | 'sample 0.01' | 'sample 1', number>>;
  readonly written: number;
  readonly dropped: number;
}

/** Measures the decider with capture off, at a 1 % sample and at sample 1. */
export async function measureCaptureCost(): Promise<CaptureCost> {
  const loaded = parseRules([{ file: 'bench.yaml', text: RULES }]);
  if (!loaded.ok) throw new Error(JSON.stringify(loaded.issues));
  const engine = createRulesEngine({ ruleSet: loaded.ruleSet, store: createMemoryStore() });
  const hub = createDecisionHub();
  const metrics = createMetrics({ hub, storeName: 'memory', processMetrics: false });
  const plain = createDecider({ engine, lists: createAccessLists(), hub, metrics, now: () => Date.now() });
  const dir = mkdtempSync(join(tmpdir(), 'sluice-capture-bench-'));
  const logger = createLogger('error');
  const start = (sample: number) =>
    startServiceCapture(
      { dir: join(dir, String(sample)), sample },
      { decider: plain, engine, clock: systemClock, registry: new Registry(), logger },
    );
  const sampled = start(0.01);
  const every = start(1);
  // Off and 1 % alternate (the comparison that matters); every decision captured is measured apart, after,
  // so its writing and garbage do not land in the others' rounds.
  const deciders: [keyof CaptureCost['rates'], Decider][] = [
    ['off', plain],
    ['sample 0.01', sampled.decider],
  ];
  const requests = Array.from({ length: KEYS }, (_, i) => ({
    domain: 'api',
    descriptors: [{ entries: [{ key: 'user', value: `user-${i}` }] }],
  }));
  const rates = new Map<string, number[]>();
  const schedule = [
    ...Array.from({ length: ROUNDS }, () => deciders).flat(),
    ...Array.from({ length: 3 }, () => ['sample 1', every.decider] as const),
  ];
  for (const [name, decider] of schedule) {
    const decide = decider.decideNow?.bind(decider);
    if (decide === undefined) throw new Error('expected decideNow');
    const began = process.hrtime.bigint();
    for (let i = 0; i < PER_ROUND; i++) decide(requests[i % KEYS] as (typeof requests)[number], 'grpc');
    const seconds = Number(process.hrtime.bigint() - began) / 1e9;
    rates.set(name, [...(rates.get(name) ?? []), PER_ROUND / seconds]);
    // The writer's turn: what a service's event loop gives it between requests.
    await new Promise((resolve) => setImmediate(resolve));
  }
  await Promise.all([sampled.writer.flush(), every.writer.flush()]);
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;
  const stats = sampled.writer.stats();
  await Promise.all([sampled.close(), every.close()]);
  rmSync(dir, { recursive: true, force: true });
  return {
    rates: {
      off: median(rates.get('off') ?? []),
      'sample 0.01': median(rates.get('sample 0.01') ?? []),
      'sample 1': median(rates.get('sample 1') ?? []),
    },
    written: stats.written,
    dropped: stats.dropped,
  };
}
