/** The simulator's HTML report: the summary table and one inline SVG chart per algorithm. */
import type { SimulationResult } from './engine.js';
import { escapeXml } from './format.js';
import { renderRunSvg } from './svg-chart.js';
import { describe, summarize, tableCells } from './table.js';

/**
 * A self-contained HTML page: the summary table and one inline SVG chart per algorithm. No scripts, no
 * stylesheets or fonts fetched from anywhere, so it opens offline and can be mailed as one file. The
 * markup is also well-formed XML (every element closed), which the tests check.
 */
export function renderHtmlReport(result: SimulationResult): string {
  const summary = summarize(result);
  const [header, ...rows] = tableCells(summary);
  const th = (header ?? []).map((h) => `<th>${escapeXml(h)}</th>`).join('');
  const tr = rows
    .map(
      (row) =>
        `<tr>${row.map((cell, c) => `<td${c === 1 || c === 2 ? ' class="n"' : ''}>${escapeXml(cell)}</td>`).join('')}</tr>`,
    )
    .join('\n');
  const charts = result.runs.map((run) => `<figure>\n${renderRunSvg(result, run)}</figure>`).join('\n');
  const title = `sluice simulate: ${result.trace.name} trace`;
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8"/>
<meta name="viewport" content="width=device-width, initial-scale=1"/>
<title>${escapeXml(title)}</title>
<style>
body { font-family: system-ui, -apple-system, Segoe UI, Helvetica, Arial, sans-serif; color: #2d3748; margin: 2rem auto; max-width: 800px; padding: 0 1rem; }
table { border-collapse: collapse; margin: 1rem 0 2rem; }
th, td { border-bottom: 1px solid #e2e8f0; padding: 0.35rem 0.7rem; text-align: left; }
td.n { text-align: right; font-variant-numeric: tabular-nums; }
figure { margin: 0 0 2rem; }
svg { max-width: 100%; height: auto; }
</style>
</head>
<body>
<h1>${escapeXml(title)}</h1>
<p>${escapeXml(describe(summary))}. Time is simulated: each request is decided at its arrival time on the memory store. “Most admitted in one period” is the largest number of units admitted in any window of one period, wherever it starts.</p>
<table>
<thead><tr>${th}</tr></thead>
<tbody>
${tr}
</tbody>
</table>
${charts}
</body>
</html>
`;
}
