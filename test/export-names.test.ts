/**
 * The exact runtime export names of every library entry point: a name that appears or disappears is a decision made
 * here (and in the docs), not a side effect of an index file.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, it } from 'node:test';

const library = join(resolve(import.meta.dirname, '..'), 'packages', 'sluice');
const entries = Object.keys(
  (JSON.parse(readFileSync(join(library, 'package.json'), 'utf8')) as { exports: Record<string, unknown> }).exports,
).filter((name) => name !== './package.json');

/** Entry point → its runtime exports, sorted. Types are not listed: they cost nothing at run time. */
const EXPECTED: Readonly<Record<string, readonly string[]>> = {
  sluice: [
    'ALGORITHMS',
    'MAX_SLIDING_LOG_LIMIT',
    'SlidingLogState',
    'SluiceError',
    'checkAll',
    'combineDecisions',
    'createConcurrencyLimiter',
    'createLimiter',
    'createManualClock',
    'createMemoryStore',
    'createReservations',
    'fixedWindow',
    'gcra',
    'isAlgorithmName',
    'isBucketAlgorithm',
    'isSluiceError',
    'leakyBucket',
    'observeWithOpenTelemetry',
    'parseDuration',
    'resolveCost',
    'resolvePolicy',
    'slidingLog',
    'slidingWindow',
    'systemClock',
    'tokenBucket',
  ],
  'sluice/redis': ['createRedisReservationRecords', 'createRedisStore', 'escapeKey', 'slotOf'],
  'sluice/rules': [
    'DEFAULT_GATEWAY_PRIORITIES',
    'DEFAULT_PATH_FOLDING',
    'MAX_DESCRIPTOR_DEPTH',
    'MAX_REPORTED_ISSUES',
    'MAX_RULE_FILE_BYTES',
    'MAX_RULE_NODES',
    'REQUEST_ERROR_CODES',
    'RULE_ISSUE_CODES',
    'UNITS',
    'UNIT_MS',
    'createRulesEngine',
    'describeRules',
    'explainRequest',
    'foldPath',
    'formatRuleIssue',
    'httpDescriptorsFor',
    'isRequestError',
    'loadRules',
    'normalizePath',
    'parseRules',
    'watchRules',
  ],
  'sluice/http': [
    'PASS',
    'PROBLEM_TYPE',
    'RATE_LIMIT_OPTION_KEYS',
    'REJECTION_CODES',
    'REJECTION_STATUS',
    'acceptsProblem',
    'createAccessList',
    'createAdaptiveGate',
    'createClientIpResolver',
    'createHttpLimiter',
    'createIpBlockMap',
    'createMiddlewareLimiter',
    'defaultBody',
    'defaultMessage',
    'isAccessList',
    'limitHeaderInfo',
    'listedHeaders',
    'nextQuotaMs',
    'nodeHeader',
    'parseForwarded',
    'parseXForwardedFor',
    'previousInfo',
    'problemDetails',
    'rateLimitHeaders',
    'retryAfterSeconds',
    'shareAdaptive',
    'toSeconds',
    'toSfString',
  ],
  'sluice/express': ['rateLimit'],
  'sluice/fastify': ['rateLimit'],
  'sluice/koa': ['rateLimit'],
  'sluice/hono': ['rateLimit'],
  'sluice/hono/edge': ['rateLimit'],
  'sluice/hono/full': ['rateLimit'],
  'sluice/node': ['rateLimit'],
  'sluice/client': [
    'IDEMPOTENT_METHODS',
    'createClient',
    'createPacer',
    'fullJitterBackoff',
    'parseRateLimitField',
    'parseRetryAfter',
    'parseXRateLimitReset',
    'retryHint',
    'timerSleep',
  ],
  'sluice/nest': [
    'RATE_LIMIT_CORE',
    'RATE_LIMIT_OPTIONS',
    'RateLimit',
    'RateLimitGuard',
    'RateLimitModule',
    'SkipRateLimit',
    'createRateLimitCore',
    'createThrottlerStorage',
  ],
  'sluice/remote': ['createRemoteStore'],
  'sluice/multi-region': ['COUNTER_ALGORITHMS', 'createMultiRegionStore', 'eventualBound', 'limitReplyBytes'],
  'sluice/adaptive': ['createAdaptiveLimiter', 'simulateService'],
  'sluice/llm': [
    'MAX_TOKEN_COUNT',
    'TOKEN_DIMENSIONS',
    'createTokenLimiter',
    'createUsageTap',
    'estimateInputTokens',
    'inspectUsage',
    'readUsage',
    'tapUsage',
    'tokenHeaders',
  ],
  'sluice/postgres': ['createPostgresStore', 'postgresTableSql'],
  'sluice/mysql': ['createMySqlStore', 'mySqlTableSql'],
  'sluice/sqlite': ['createSqliteStore', 'sqliteTableSql'],
  'sluice/testing': ['T0', 'createKitStore', 'runDifferential', 'runStoreConformance', 'storeConformance'],
};

describe('library export names', () => {
  it('lists every entry point of package.json', () => {
    assert.deepEqual(
      entries.map((name) => (name === '.' ? 'sluice' : `sluice/${name.slice(2)}`)).sort(),
      Object.keys(EXPECTED).sort(),
    );
  });

  for (const [entry, names] of Object.entries(EXPECTED)) {
    it(`${entry} exports exactly its listed names`, async () => {
      const mod = (await import(entry)) as Record<string, unknown>;
      const actual = Object.keys(mod)
        .filter((name) => name !== 'default' && name !== 'module.exports')
        .sort();
      assert.deepEqual(actual, [...names].sort(), `${entry}: add or remove a public name here on purpose`);
    });
  }

  it('internals of the IP code stay private (the service uses createIpBlockMap and createClientIpResolver)', async () => {
    const http = (await import('sluice/http')) as Record<string, unknown>;
    for (const name of ['parseIp', 'parseCidr', 'cidrContains', 'formatIp', 'maskIp', 'IpPrefixTable', 'PROXY_GROUPS'])
      assert.equal(http[name], undefined, name);
  });
});
