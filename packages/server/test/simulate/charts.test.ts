import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ALGORITHMS } from 'sluice';
import {
  generateTrace,
  renderHtmlReport,
  renderRunSvg,
  renderSimulationSvg,
  simulate,
  TRACE_NAMES,
} from '../../src/tools/simulate/index.js';
import { checkXml } from './xml-check.js';

function result(traceName: (typeof TRACE_NAMES)[number] = 'boundary') {
  const trace = generateTrace(traceName, { limit: 10, periodMs: 1000 });
  return simulate({ trace, algorithms: ALGORITHMS, limit: 10, periodMs: 1000 });
}

/** No scripts, no event handlers, nothing fetched: the only URL is the SVG namespace. */
function assertSelfContained(text: string): void {
  const urls = text.match(/\b(?:https?:)?\/\/[^\s"'<>)]+/g) ?? [];
  assert.deepEqual(
    urls.filter((u) => u !== 'http://www.w3.org/2000/svg'),
    [],
    'no external references',
  );
  assert.doesNotMatch(text, /<script|<link|<img|<iframe|\son[a-z]+=|@import|url\(/i);
}

describe('the XML checker', () => {
  it('accepts a well-formed document and lists its elements', () => {
    const els = checkXml('<a x="1"><b/><c y=\'2 &amp; 3\'>t &lt; u</c></a>');
    assert.deepEqual(
      els.map((e) => [e.name, e.ancestors.join('/')]),
      [
        ['a', ''],
        ['b', 'a'],
        ['c', 'a'],
      ],
    );
    assert.equal(els[2]?.attributes.y, '2 &amp; 3');
  });

  for (const [bad, why] of [
    ['<a><b></a></b>', /closes/],
    ['<a>', /never closed/],
    ['<a x=1></a>', /not quoted/],
    ['<a x="1" x="2"></a>', /repeated/],
    ['<a>&nbsp</a>', /bare &/],
    ['<a></a><b></b>', /more than one root/],
    ['<a y="<"></a>', /'<' in attribute/],
  ] as const) {
    it(`rejects ${bad}`, () => assert.throws(() => checkXml(bad), why));
  }
});

describe('SVG charts', () => {
  for (const traceName of TRACE_NAMES) {
    it(`every algorithm's chart of the ${traceName} trace is well-formed, self-contained SVG`, () => {
      const r = result(traceName);
      for (const run of r.runs) {
        const svg = renderRunSvg(r, run);
        const els = checkXml(svg);
        const root = els[0];
        assert.equal(root?.name, 'svg');
        assert.equal(root?.attributes.xmlns, 'http://www.w3.org/2000/svg');
        assert.match(root?.attributes.viewBox ?? '', /^0 0 \d+ \d+$/);
        assert.equal(els[1]?.name, 'title', 'accessible name first');
        assertSelfContained(svg);
        // The numbers drawn are the run's numbers.
        assert.ok(svg.includes(`${run.admitted} admitted, ${run.rejected} rejected`));
        assert.ok(svg.includes(`peak ${run.peak.units}`), `${run.algorithm}: peak marked`);
        for (const e of els) {
          for (const [name, value] of Object.entries(e.attributes)) {
            if (/^(x|y|x1|y1|x2|y2|width|height|cx|cy|r)$/.test(name)) {
              assert.ok(Number.isFinite(Number(value)), `${e.name} ${name}="${value}" is a number`);
            }
          }
        }
      }
    });
  }

  it('draws admitted and rejected bars whose heights add up to the trace', () => {
    const r = result('boundary');
    const run = r.runs.find((x) => x.algorithm === 'sliding-log');
    assert.ok(run);
    const els = checkXml(renderRunSvg(r, run));
    const bars = els.filter((e) => e.name === 'rect' && e.ancestors.at(-1) === 'g');
    const green = bars.filter((e) => e.attributes.fill === '#2f855a');
    const red = bars.filter((e) => e.attributes.fill === '#e53e3e');
    assert.ok(green.length > 0 && red.length > 0, 'both admitted and rejected bars drawn');
    // 10 per 100 ms fills the panel (120 px high; axis to 10): so a bar's height / 12 is its count.
    const sum = (rs: typeof bars) => rs.reduce((s, e) => s + Number(e.attributes.height) / 12, 0);
    assert.equal(Math.round(sum(green)), run.admitted);
    assert.equal(Math.round(sum(red)), run.rejected);
  });

  it('stacks every algorithm into one SVG', () => {
    const r = result('bursty');
    const svg = renderSimulationSvg(r);
    const els = checkXml(svg);
    assert.equal(els.filter((e) => e.name === 'svg').length, 1);
    assert.equal(els.filter((e) => e.name === 'g' && e.attributes.transform?.startsWith('translate')).length, 6);
    assertSelfContained(svg);
  });
});

describe('HTML report', () => {
  it('is a well-formed, self-contained page with the table and one inline SVG per algorithm', () => {
    const r = result('poisson');
    const html = renderHtmlReport(r);
    assert.match(html, /^<!DOCTYPE html>\n<html lang="en">/);
    const els = checkXml(html);
    assert.equal(els[0]?.name, 'html');
    assert.deepEqual(
      els.filter((e) => e.ancestors.length === 1).map((e) => e.name),
      ['head', 'body'],
    );
    assert.ok(els.some((e) => e.name === 'meta' && e.attributes.charset === 'utf-8'));
    const svgs = els.filter((e) => e.name === 'svg');
    assert.equal(svgs.length, ALGORITHMS.length);
    assert.ok(svgs.every((e) => e.ancestors.at(-1) === 'figure'));
    assert.equal(els.filter((e) => e.name === 'tr').length, ALGORITHMS.length + 1);
    assertSelfContained(html);
    const slidingWindow = r.runs.find((x) => x.algorithm === 'sliding-window');
    assert.ok(html.includes(`${slidingWindow?.exact?.wronglyAllowed} allowed`));
  });

  it('escapes a CSV file name that looks like markup', () => {
    const r = simulate({
      trace: { name: '<b>&"x".csv', events: [{ atMs: 0, cost: 1 }] },
      algorithms: ['gcra'],
      limit: 1,
      periodMs: 1000,
    });
    checkXml(renderHtmlReport(r));
    const svg = renderRunSvg(r, r.runs[0] as (typeof r.runs)[number]);
    checkXml(svg);
    assert.ok(svg.includes('&lt;b&gt;&amp;&quot;x&quot;.csv'));
  });
});
