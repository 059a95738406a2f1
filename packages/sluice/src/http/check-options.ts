/**
 * Validation of `rateLimit()`'s options when the middleware is built: an unknown option is an error (with the sluice
 * spelling when it is another library's), and every problem names its option and the fix.
 */
import { optionError, SluiceError } from '../core/errors.js';
import { type AccessList, createAccessList, isAccessList } from './access-list.js';
import { migrationHint } from './migration-hints.js';
import { RATE_LIMIT_OPTION_KEYS, type RateLimitOptions } from './options.js';
import { warnOnce } from './warn.js';

/** Options that are functions. */
const FUNCTIONS = ['key', 'skip', 'body', 'onLimited', 'sleep', 'peerAddress'] as const;

/** Options that take one of a few values, and those values. */
const CHOICES: Readonly<Record<string, readonly unknown[]>> = {
  mode: ['reject', 'shape'],
  headers: ['x', 'draft', 'both', false],
  fail: ['open', 'closed', 'insurance'],
  shadow: [true, false],
  shared: [true, false],
  xRateLimitReset: ['seconds', 'epoch'],
};

/** What a rules engine decides itself, so none of it is given beside `rules`. */
const DECIDED_BY_RULES = ['limit', 'period', 'algorithm', 'burst', 'blockDuration', 'limits', 'key', 'store'] as const;

/** Periods in milliseconds that configs in seconds commonly hold (see warnSecondsLikePeriod). */
const SECONDS_LIKE: readonly unknown[] = [1, 5, 10, 15, 30, 60, 120, 300, 600, 900];

/** A whole number from min to max. */
const isWhole = (value: unknown, min: number, max: number): boolean =>
  Number.isInteger(value) && (value as number) >= min && (value as number) <= max;

/** An allow or deny option as a live list. */
export function toAccessList(value: readonly string[] | AccessList | undefined, option: string): AccessList {
  if (value === undefined) return createAccessList();
  if (isAccessList(value)) return value;
  if (!Array.isArray(value)) throw optionError(option, 'expected an array of IPs, CIDRs and keys');
  try {
    return createAccessList(value);
  } catch (error) {
    throw optionError(option, (error as Error).message);
  }
}

/** Validates the options once, at construction; every problem names its option and the fix. */
export function checkOptions<Req>(
  options: RateLimitOptions<Req>,
  extraKeys: ReadonlySet<string>,
  framework?: string,
): void {
  if (options === null || typeof options !== 'object') {
    throw new SluiceError('ERR_SLUICE_INVALID_OPTION', 'rateLimit: expected an options object');
  }
  checkKnownNames(options, extraKeys, framework);
  warnSecondsLikePeriod(options.period, 'period');
  if (Array.isArray(options.limits)) {
    for (const [i, l] of options.limits.entries()) {
      if (l !== null && typeof l === 'object') warnSecondsLikePeriod(l.period, `limits[${i}].period`);
    }
  }
  checkKinds(options);
  checkNumbers(options);
  if (options.rules !== undefined) checkRules(options);
  if (options.mode !== 'shape' && (options.maxDelayMs !== undefined || options.sleep !== undefined)) {
    throw new SluiceError('ERR_SLUICE_INVALID_OPTION', "maxDelayMs, sleep: only apply with mode: 'shape'", {
      option: options.maxDelayMs !== undefined ? 'maxDelayMs' : 'sleep',
    });
  }
}

/** An unknown option is an error, with the sluice spelling when it is another library's. */
function checkKnownNames<Req>(options: RateLimitOptions<Req>, extraKeys: ReadonlySet<string>, framework?: string) {
  for (const k of Object.keys(options)) {
    if (!RATE_LIMIT_OPTION_KEYS.has(k) && !extraKeys.has(k)) {
      const hint = migrationHint(k, options as Record<string, unknown>, framework);
      throw optionError(
        k,
        hint === undefined
          ? `unknown option of rateLimit (known: ${[...RATE_LIMIT_OPTION_KEYS, ...extraKeys].join(', ')})`
          : `not a sluice option; ${hint}`,
        'ERR_SLUICE_UNKNOWN_OPTION',
      );
    }
  }
}

/** Options that are functions, and options that take one of a few values. */
function checkKinds<Req>(options: RateLimitOptions<Req>): void {
  for (const name of FUNCTIONS) {
    const v = options[name];
    if (v !== undefined && typeof v !== 'function') throw optionError(name, 'expected a function');
  }
  for (const [name, allowed] of Object.entries(CHOICES)) {
    const v = options[name as keyof RateLimitOptions<Req>];
    if (v !== undefined && !allowed.includes(v)) {
      throw optionError(name, `${JSON.stringify(v)} is not one of ${allowed.map((a) => JSON.stringify(a)).join(', ')}`);
    }
  }
}

/** cost, maxDelayMs, statusCode and message. */
function checkNumbers<Req>(options: RateLimitOptions<Req>): void {
  const { cost, maxDelayMs, statusCode, message } = options;
  if (cost !== undefined && typeof cost !== 'function' && !isWhole(cost, 0, 1e9)) {
    throw optionError('cost', `${String(cost)} is not a whole number ≥ 0 or a function`, 'ERR_SLUICE_INVALID_COST');
  }
  if (maxDelayMs !== undefined && !(Number.isInteger(maxDelayMs) && maxDelayMs >= 0)) {
    throw optionError('maxDelayMs', `${String(maxDelayMs)} is not a whole number ≥ 0`);
  }
  if (statusCode !== undefined && !isWhole(statusCode, 400, 599)) {
    throw optionError('statusCode', `${String(statusCode)} is not a 4xx or 5xx status`);
  }
  if (message !== undefined && typeof message !== 'string' && typeof message !== 'function') {
    throw optionError('message', 'expected a string or a function');
  }
}

/** `rules` is a rules engine, and the options it decides are not given as well. */
function checkRules<Req>(options: RateLimitOptions<Req>): void {
  const rules = options.rules as { checkHttp?: unknown } | null;
  if (typeof rules !== 'object' || typeof rules?.checkHttp !== 'function') {
    throw optionError('rules', 'expected a rules engine (createRulesEngine from sluice/rules)');
  }
  const clash = DECIDED_BY_RULES.filter((k) => options[k] !== undefined);
  if (clash.length > 0 || options.mode === 'shape') {
    throw optionError('rules', `the rules decide limits, keys and store; drop ${clash.join(', ') || "mode: 'shape'"}`);
  }
}

/**
 * `period: 60` is 60 milliseconds. Users of rate-limiter-flexible (`duration` in seconds) and of
 * configs in seconds write it meaning a minute; nobody limits per 60 ms on purpose often enough to
 * stay silent, so a whole number of seconds below a second-sized value gets a warning with the fix.
 */
function warnSecondsLikePeriod(period: unknown, option: string): void {
  if (!SECONDS_LIKE.includes(period)) return;
  warnOnce(
    'SLUICE_PERIOD_LOOKS_LIKE_SECONDS',
    `sluice: ${option}: ${period} is ${period} milliseconds. If you meant seconds, write '${period}s' ` +
      `(durations are milliseconds or strings such as '1min', '1h30m').`,
    `period:${period}`,
  );
}
