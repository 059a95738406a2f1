/**
 * `sluice simulate` as a library: generate or read a traffic trace, run it through the algorithms with
 * simulated time, and draw what each admitted. Pure: no files, no clock, no network — the CLI command
 * does the I/O.
 *
 * @example
 * const trace = generateTrace('boundary', { limit: 10, periodMs: 1000 });
 * const result = simulate({ trace, algorithms: ['fixed-window', 'sliding-log'], limit: 10, periodMs: 1000 });
 * console.log(formatTable(summarize(result)));
 * @packageDocumentation
 */
export type { TraceProblem } from './csv-trace.js';
export { parseCsvTrace, TraceParseError } from './csv-trace.js';
export type { AlgorithmRun, ExactComparison, SimulationOptions, SimulationResult } from './engine.js';
export { simulate } from './engine.js';
export { renderHtmlReport } from './html-report.js';
export type { OverloadOptions, OverloadRow } from './overload.js';
export { simulateOverload } from './overload.js';
export { formatOverloadTable, renderOverloadSvg } from './overload-report.js';
export { createSeededRandom } from './random.js';
export type {
  RawRedis,
  RegionMode,
  RegionModeRun,
  RegionSimulationOptions,
  RegionSimulationResult,
  Split,
} from './regions.js';
export { REGION_MODES, regionOf, SPLITS, simulateRegions } from './regions.js';
export { formatRegionsTable, regionsTableCells, renderRegionsHtml, renderRegionsSvg } from './regions-report.js';
export type { RunSeries } from './series.js';
export { seriesOf } from './series.js';
export { renderRunSvg, renderSimulationSvg } from './svg-chart.js';
export type { Summary, SummaryRow } from './table.js';
export { describe, formatTable, summarize } from './table.js';
export type { Trace, TraceEvent, TraceName, TraceSettings } from './trace.js';
export { DEFAULT_LOAD, DEFAULT_PERIODS, generateTrace, isTraceName, TRACE_NAMES } from './trace.js';
