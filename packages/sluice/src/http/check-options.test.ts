/**
 * The errors of `rateLimit()`'s option checks, word for word: each has its code, names its option (for programs)
 * and says what to write instead.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { isSluiceError } from '../core/errors.js';
import { checkOptions, toAccessList } from './check-options.js';

const engine = { checkHttp: () => Promise.resolve(undefined) };
const sleep = async () => {};

/** Options → the code, option and message of the error they are refused with. */
const REFUSED: readonly (readonly [unknown, string, string | undefined, string | RegExp])[] = [
  [null, 'ERR_SLUICE_INVALID_OPTION', undefined, 'rateLimit: expected an options object'],
  [
    { limit: 1, period: '1s', limitt: 2 },
    'ERR_SLUICE_UNKNOWN_OPTION',
    'limitt',
    /^limitt: unknown option of rateLimit \(known: algorithm, limit, period, .*, ipv6Subnet, handler\)$/,
  ],
  [
    { windowMs: 60_000, max: 5 },
    'ERR_SLUICE_UNKNOWN_OPTION',
    'windowMs',
    "windowMs: not a sluice option; express-rate-limit's windowMs is sluice's period (milliseconds or a string): { period: '1m' }",
  ],
  [{ skip: true }, 'ERR_SLUICE_INVALID_OPTION', 'skip', 'skip: expected a function'],
  [{ mode: 'queue' }, 'ERR_SLUICE_INVALID_OPTION', 'mode', 'mode: "queue" is not one of "reject", "shape"'],
  [
    { headers: 'all' },
    'ERR_SLUICE_INVALID_OPTION',
    'headers',
    'headers: "all" is not one of "x", "draft", "both", false',
  ],
  [{ shadow: 'yes' }, 'ERR_SLUICE_INVALID_OPTION', 'shadow', 'shadow: "yes" is not one of true, false'],
  [{ cost: 1.5 }, 'ERR_SLUICE_INVALID_COST', 'cost', 'cost: 1.5 is not a whole number ≥ 0 or a function'],
  [
    { mode: 'shape', maxDelayMs: -1 },
    'ERR_SLUICE_INVALID_OPTION',
    'maxDelayMs',
    'maxDelayMs: -1 is not a whole number ≥ 0',
  ],
  [{ statusCode: 200 }, 'ERR_SLUICE_INVALID_OPTION', 'statusCode', 'statusCode: 200 is not a 4xx or 5xx status'],
  [{ message: 42 }, 'ERR_SLUICE_INVALID_OPTION', 'message', 'message: expected a string or a function'],
  [
    { rules: {} },
    'ERR_SLUICE_INVALID_OPTION',
    'rules',
    'rules: expected a rules engine (createRulesEngine from sluice/rules)',
  ],
  [
    // The middleware decides each request with the engine's checkHttp: an object without it is no rules engine.
    { rules: { shouldRateLimit: () => Promise.resolve({}) } },
    'ERR_SLUICE_INVALID_OPTION',
    'rules',
    'rules: expected a rules engine (createRulesEngine from sluice/rules)',
  ],
  [
    { rules: engine, limit: 1, period: '1s', store: {} },
    'ERR_SLUICE_INVALID_OPTION',
    'rules',
    'rules: the rules decide limits, keys and store; drop limit, period, store',
  ],
  [
    { rules: engine, mode: 'shape' },
    'ERR_SLUICE_INVALID_OPTION',
    'rules',
    "rules: the rules decide limits, keys and store; drop mode: 'shape'",
  ],
  [{ maxDelayMs: 5 }, 'ERR_SLUICE_INVALID_OPTION', 'maxDelayMs', "maxDelayMs, sleep: only apply with mode: 'shape'"],
  [{ sleep }, 'ERR_SLUICE_INVALID_OPTION', 'sleep', "maxDelayMs, sleep: only apply with mode: 'shape'"],
];

describe('checkOptions', () => {
  it('refuses each bad option with its code, its name and the fix', () => {
    for (const [options, code, option, message] of REFUSED) {
      assert.throws(
        () => checkOptions(options as never, new Set(['handler'])),
        (e: unknown) => {
          assert.ok(isSluiceError(e), String(e));
          assert.equal(e.code, code);
          assert.equal(e.option, option);
          if (typeof message === 'string') assert.equal(e.message, message);
          else assert.match(e.message, message);
          return true;
        },
      );
    }
  });

  it('accepts good options, and what the adapter adds', () => {
    checkOptions({ limit: 1, period: '1s', mode: 'shape', maxDelayMs: 0, sleep, cost: 0, statusCode: 503 }, new Set());
    checkOptions({ rules: engine as never, headers: false, shadow: true, message: 'slow down' }, new Set());
    checkOptions({ limit: 1, period: '1s', handler: () => {} } as never, new Set(['handler']));
  });

  it('refuses an allow or deny option that is not a list', () => {
    assert.throws(() => toAccessList('10.0.0.1' as never, 'allow'), {
      code: 'ERR_SLUICE_INVALID_OPTION',
      option: 'allow',
      message: 'allow: expected an array of IPs, CIDRs and keys',
    });
    assert.deepEqual(toAccessList(['10.0.0.0/8', 'key-1'], 'deny').entries(), ['10.0.0.0/8', 'key-1']);
  });
});
