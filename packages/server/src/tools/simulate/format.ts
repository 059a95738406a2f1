/** Escapes text for XML/HTML content and attribute values. */
export function escapeXml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ESCAPES[c] as string);
}

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

const UNITS: readonly [number, string][] = [
  [86_400_000, 'd'],
  [3_600_000, 'h'],
  [60_000, 'm'],
  [1000, 's'],
];

/** A duration in ms as the shortest exact duration string: 1000 → `1s`, 90000 → `90s`, 250 → `250ms`. */
export function formatDuration(ms: number): string {
  for (const [size, unit] of UNITS) {
    if (ms !== 0 && ms % size === 0) return `${ms / size}${unit}`;
  }
  if (ms >= 1000 && Number.isInteger(ms)) return `${ms / 1000}s`;
  return `${round(ms, 1)}ms`;
}

/** `x` rounded to `digits` decimals, without trailing zeros. */
export function round(x: number, digits = 1): number {
  const f = 10 ** digits;
  return Math.round(x * f) / f;
}

/** A percentage with enough digits to be read for small rates: 0.00312 → `0.312%`. */
export function formatPercent(rate: number): string {
  const pct = rate * 100;
  if (pct === 0) return '0%';
  if (pct >= 10) return `${pct.toFixed(1)}%`;
  if (pct >= 0.1) return `${pct.toFixed(2)}%`;
  return `${pct.toPrecision(2)}%`;
}

/** A step of 1, 2 or 5 × 10^k that divides `0..max` into at most `count` intervals. */
export function niceStep(max: number, count = 4): number {
  if (max <= 0) return 1;
  const raw = max / count;
  const power = 10 ** Math.floor(Math.log10(raw));
  for (const m of [1, 2, 5, 10]) {
    if (m * power >= raw) return Math.max(1, m * power);
  }
  return Math.max(1, 10 * power);
}
