/** `sluice explain`'s human output: the verdict, then per domain and descriptor the rule walked to and every counter. */

type Json = Record<string, unknown>;

const list = (v: unknown): Json[] => (Array.isArray(v) ? (v as Json[]) : []);
const entriesText = (d: Json) =>
  list(d.entries)
    .map((e) => `${String(e.key)}=${String(e.value)}`)
    .join(', ');

function duration(ms: unknown): string {
  if (typeof ms !== 'number') return 'never';
  if (ms < 1000) return `${ms} ms`;
  if (ms < 120_000) return `${(ms / 1000).toFixed(ms < 10_000 ? 1 : 0)} s`;
  if (ms < 7_200_000) return `${Math.round(ms / 60_000)} min`;
  return `${Math.round(ms / 3_600_000)} h`;
}

/** When a counter refills: an unused one (nothing taken, so nothing to reset) says so. */
const resetText = (resetMs: unknown) => (resetMs === 0 ? 'unused' : `resets in ${duration(resetMs)}`);

function limitLine(l: Json): string {
  const name = l.name === undefined ? '' : `${String(l.name)}: `;
  const state = l.allowed === true ? 'passes' : `refuses (${String(l.reason ?? 'over')})`;
  const retry = l.allowed === true ? '' : `, passes again in ${duration(l.retryAfterMs)}`;
  const flags = `${l.binding === true ? ' [binding]' : ''}${l.degraded === true ? ' [degraded: failure policy]' : ''}`;
  return `      ${name}${String(l.limit)} per ${duration(l.periodMs)} (${String(l.algorithm)}): ${String(l.remaining)} left, ${resetText(l.resetMs)}, ${state}${retry}${flags}`;
}

function descriptorLines(d: Json, i: number): string[] {
  const out = [`  descriptor ${i} [${entriesText(d)}]: ${String(d.outcome)}`];
  if (d.entry !== undefined) out.push(`    matched the list entry ${entriesText({ entries: [d.entry] })}`);
  const steps = list(d.steps);
  if (steps.length > 0) {
    out.push(
      `    walk: ${steps.map((s) => `${String(s.key)}=${String(s.value)} → ${String(s.rule)} (${String(s.matchedBy)})`).join(' / ')}`,
    );
  }
  const rule = d.rule as Json | undefined;
  if (rule !== undefined) out.push(`    rule: ${String(rule.descriptor)} (${String(rule.file)}:${String(rule.line)})`);
  if (typeof d.why === 'string') out.push(`    why: ${d.why}`);
  if (typeof d.key === 'string') out.push(`    counter key: ${d.key}`);
  if (list(d.replaced).length > 0) out.push(`    replaced by another matched limit: ${list(d.replaced).join(', ')}`);
  if (d.shadow === true) out.push('    shadow mode: counted and reported, never refuses');
  if (d.quota === true) out.push('    quota mode');
  for (const l of list(d.limits)) out.push(limitLine(l));
  return out;
}

function checkLine(c: Json, i: number): string {
  if (c.error !== undefined) return `  check ${i}: invalid: ${String((c.error as Json).message)}`;
  const p = (c.policy ?? {}) as Json;
  const state = c.remaining === undefined ? '' : `, ${String(c.remaining)} left, ${resetText(c.resetMs)}`;
  return `  check ${i} ${String(c.key)}: ${String(c.verdict)} (${String(p.limit)} per ${duration(p.periodMs)}, ${String(p.algorithm)})${state}`;
}

/** The explain answer as lines for a terminal. */
export function formatExplanation(answer: Json): string {
  const lines = [
    `${String(answer.overallCode)}${answer.verdict === undefined ? '' : ` — decided by: ${String(answer.verdict)}`}`,
  ];
  if (answer.addressList !== undefined) lines.push(`  the client address is on the ${String(answer.addressList)} list`);
  for (const [i, c] of list(answer.checks).entries()) lines.push(checkLine(c, i));
  const domains = list(answer.domains);
  if (answer.checks === undefined && domains.length === 0 && answer.addressList === undefined) {
    lines.push('  no rule of the http: sections made a descriptor for this request');
  }
  for (const domain of domains) {
    const known = domain.domainKnown === false ? ' (no rules for this domain)' : '';
    const extra = `${domain.shadowed === true ? ', global shadow mode let it pass' : ''}${domain.degraded === true ? ', store degraded' : ''}`;
    lines.push(
      `domain ${String(domain.domain)}${known}: ${String(domain.overallCode)} (${String(domain.verdict)}${extra})`,
    );
    for (const [i, d] of list(domain.descriptors).entries()) lines.push(...descriptorLines(d, i));
  }
  return `${lines.join('\n')}\n`;
}
