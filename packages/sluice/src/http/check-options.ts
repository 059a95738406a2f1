/**
 * Validation of `rateLimit()`'s options when the middleware is built: an unknown option is an error (with the sluice
 * spelling when it is another library's), and every problem names its option and the fix.
 */
import { SluiceError } from '../core/errors.js';
import { type AccessList, createAccessList, isAccessList } from './access-list.js';
import { migrationHint } from './migration-hints.js';
import { RATE_LIMIT_OPTION_KEYS, type RateLimitOptions } from './options.js';
import { warnOnce } from './warn.js';

/** An allow or deny option as a live list. */
export function toAccessList(value: readonly string[] | AccessList | undefined, option: string): AccessList {
  if (value === undefined) return createAccessList();
  if (isAccessList(value)) return value;
  if (!Array.isArray(value)) {
    throw new SluiceError('ERR_SLUICE_INVALID_OPTION', `${option}: expected an array of IPs, CIDRs and keys`, {
      option,
    });
  }
  try {
    return createAccessList(value);
  } catch (error) {
    throw new SluiceError('ERR_SLUICE_INVALID_OPTION', `${option}: ${(error as Error).message}`, { option });
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
      throw new SluiceError(
        'ERR_SLUICE_UNKNOWN_OPTION',
        hint === undefined
          ? `${k}: unknown option of rateLimit (known: ${[...RATE_LIMIT_OPTION_KEYS, ...extraKeys].join(', ')})`
          : `${k}: not a sluice option; ${hint}`,
        { option: k },
      );
    }
  }
}

/** Options that are functions, and options that take one of a few values. */
function checkKinds<Req>(options: RateLimitOptions<Req>): void {
  for (const name of ['key', 'skip', 'body', 'onLimited', 'sleep', 'peerAddress'] as const) {
    const v = options[name];
    if (v !== undefined && typeof v !== 'function') {
      throw new SluiceError('ERR_SLUICE_INVALID_OPTION', `${name}: expected a function`, { option: name });
    }
  }
  const oneOf = (name: keyof RateLimitOptions<Req>, allowed: readonly unknown[]) => {
    const v = options[name];
    if (v !== undefined && !allowed.includes(v)) {
      throw new SluiceError(
        'ERR_SLUICE_INVALID_OPTION',
        `${name}: ${JSON.stringify(v)} is not one of ${allowed.map((a) => JSON.stringify(a)).join(', ')}`,
        { option: name },
      );
    }
  };
  oneOf('mode', ['reject', 'shape']);
  oneOf('headers', ['x', 'draft', 'both', false]);
  oneOf('fail', ['open', 'closed', 'insurance']);
  oneOf('shadow', [true, false]);
  oneOf('shared', [true, false]);
  oneOf('xRateLimitReset', ['seconds', 'epoch']);
}

/** cost, maxDelayMs, statusCode and message. */
function checkNumbers<Req>(options: RateLimitOptions<Req>): void {
  const { cost, maxDelayMs, statusCode, message } = options;
  if (cost !== undefined && typeof cost !== 'function' && !(Number.isInteger(cost) && cost >= 0 && cost <= 1e9)) {
    throw new SluiceError('ERR_SLUICE_INVALID_COST', `cost: ${String(cost)} is not a whole number ≥ 0 or a function`, {
      option: 'cost',
    });
  }
  if (maxDelayMs !== undefined && !(Number.isInteger(maxDelayMs) && maxDelayMs >= 0)) {
    throw new SluiceError('ERR_SLUICE_INVALID_OPTION', `maxDelayMs: ${String(maxDelayMs)} is not a whole number ≥ 0`, {
      option: 'maxDelayMs',
    });
  }
  if (statusCode !== undefined && !(Number.isInteger(statusCode) && statusCode >= 400 && statusCode <= 599)) {
    throw new SluiceError('ERR_SLUICE_INVALID_OPTION', `statusCode: ${String(statusCode)} is not a 4xx or 5xx status`, {
      option: 'statusCode',
    });
  }
  if (message !== undefined && typeof message !== 'string' && typeof message !== 'function') {
    throw new SluiceError('ERR_SLUICE_INVALID_OPTION', 'message: expected a string or a function', {
      option: 'message',
    });
  }
}

/** `rules` is a rules engine, and the options it decides are not given as well. */
function checkRules<Req>(options: RateLimitOptions<Req>): void {
  const rules = options.rules as { shouldRateLimit?: unknown; ruleSet?: unknown };
  if (typeof rules !== 'object' || rules === null || typeof rules.shouldRateLimit !== 'function') {
    throw new SluiceError(
      'ERR_SLUICE_INVALID_OPTION',
      'rules: expected a rules engine (createRulesEngine from sluice/rules)',
      {
        option: 'rules',
      },
    );
  }
  const clash = ['limit', 'period', 'algorithm', 'burst', 'blockDuration', 'limits', 'key', 'store'].filter(
    (k) => options[k as keyof RateLimitOptions<Req>] !== undefined,
  );
  if (clash.length > 0 || options.mode === 'shape') {
    throw new SluiceError(
      'ERR_SLUICE_INVALID_OPTION',
      `rules: the rules decide limits, keys and store; drop ${clash.length > 0 ? clash.join(', ') : "mode: 'shape'"}`,
      { option: 'rules' },
    );
  }
}

/**
 * `period: 60` is 60 milliseconds. Users of rate-limiter-flexible (`duration` in seconds) and of
 * configs in seconds write it meaning a minute; nobody limits per 60 ms on purpose often enough to
 * stay silent, so a whole number of seconds below a second-sized value gets a warning with the fix.
 */
function warnSecondsLikePeriod(period: unknown, option: string): void {
  if (typeof period !== 'number' || !Number.isInteger(period) || period < 1 || period > 999) return;
  if (![1, 5, 10, 15, 30, 60, 120, 300, 600, 900].includes(period)) return;
  warnOnce(
    'SLUICE_PERIOD_LOOKS_LIKE_SECONDS',
    `sluice: ${option}: ${period} is ${period} milliseconds. If you meant seconds, write '${period}s' ` +
      `(durations are milliseconds or strings such as '1min', '1h30m').`,
    `period:${period}`,
  );
}
