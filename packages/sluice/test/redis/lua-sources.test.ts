/**
 * The stores' Lua: the .lua files are the source of truth, the generated module holds exactly them, and every script
 * the stores run (static and templated alike) loads into a real Redis (SCRIPT LOAD compiles it: a syntax check).
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, it } from 'node:test';
// @ts-expect-error: a plain .mjs script without type declarations
import { generate, luaFiles, OUTPUT } from '../../../../scripts/generate-lua.mjs';
import { useRedis } from '../../../../test/helpers/redis-client.js';
import { type AlgorithmName, resolvePolicy } from '../../src/core/policy.js';
import * as escrow from '../../src/stores/multi-region/escrow-lua.js';
import * as eventual from '../../src/stores/multi-region/eventual-lua.js';
import { ALGORITHM_CODES } from '../../src/stores/redis/lua.js';
import { LUA_SOURCES } from '../../src/stores/redis/lua-sources.js';
import {
  ACQUIRE_SCRIPT,
  ALL_SCRIPTS,
  CHECK_SCRIPTS,
  MANY_SCRIPT,
  policyScript,
  REFUND_SCRIPT,
  RELEASE_SCRIPT,
  type Script,
} from '../../src/stores/redis/scripts.js';

const stores = resolve(import.meta.dirname, '..', '..', 'src', 'stores');

/** Every Script value of a module, including those in a record of them. */
function scriptsOf(mod: Record<string, unknown>): Script[] {
  const isScript = (v: unknown): v is Script => typeof v === 'object' && v !== null && 'sha' in v && 'source' in v;
  return Object.values(mod).flatMap((v) =>
    isScript(v) ? [v] : typeof v === 'object' && v !== null ? Object.values(v).filter(isScript) : [],
  );
}

describe('Lua sources', () => {
  it('the generated module is in step with the .lua files (else: node scripts/generate-lua.mjs)', () => {
    assert.equal(readFileSync(OUTPUT, 'utf8'), generate(), 'run node scripts/generate-lua.mjs');
    const files = (luaFiles() as [string, string][]).map(([name]) => name);
    assert.deepEqual(Object.keys(LUA_SOURCES), files);
    for (const [name, text] of luaFiles() as [string, string][])
      assert.equal(LUA_SOURCES[name as keyof typeof LUA_SOURCES], text, name);
  });

  it('every .lua file opens with a comment saying what it is', () => {
    for (const dir of ['redis', 'multi-region']) {
      for (const file of readdirSync(join(stores, dir, 'lua'))) {
        assert.match(readFileSync(join(stores, dir, 'lua', file), 'utf8'), /^-- \S/, `${dir}/lua/${file}`);
      }
    }
  });
});

const algorithms = Object.keys(ALGORITHM_CODES) as AlgorithmName[];
/** Each algorithm's policy scripts (its batch script with the policy written in), blocking and not. */
const policyScripts = algorithms.flatMap((algorithm) => [
  policyScript(resolvePolicy({ algorithm, limit: 10, period: '1m' })),
  policyScript(resolvePolicy({ algorithm, limit: 7, period: '1s', blockDuration: '1m' })),
]);
/**
 * Every script the Redis store assembles from its templated .lua files (lua.ts): each algorithm's batch
 * script (a lone check is a batch of one) and policy scripts; the multi-limit script, which holds every
 * algorithm's check, refund and charge steps; refunds; leases.
 */
const redisScripts = [
  ...Object.values(CHECK_SCRIPTS),
  ...policyScripts,
  MANY_SCRIPT,
  REFUND_SCRIPT,
  ACQUIRE_SCRIPT,
  RELEASE_SCRIPT,
];

describe('the assembled Redis store scripts', () => {
  it('hold no template word: every macro and constant was expanded', () => {
    // Lua's own upper-case names in these scripts have no underscore but REDIS_VERSION_NUM (a field of redis).
    for (const script of redisScripts) {
      const code = script.source.replace(/--[^\n]*/g, '').replace(/'[^'\n]*'/g, "''");
      const left = code.match(/(?<![.\w])[A-Z][A-Z0-9]*_[A-Z0-9_]*\b/g) ?? [];
      assert.deepEqual(left, [], script.name);
    }
  });

  it('every check script pastes its own algorithm once, and the multi-limit script all of them', () => {
    for (const algorithm of algorithms) {
      const source = CHECK_SCRIPTS[algorithm].source;
      assert.equal(source.match(/repeat\n/g)?.length, 1, algorithm);
    }
    for (const code of Object.values(ALGORITHM_CODES))
      assert.match(MANY_SCRIPT.source, new RegExp(`CHECK\\[${code}\\] =`));
  });
});

describe('every store script loads into Redis', () => {
  const redis = useRedis();

  const all = [...ALL_SCRIPTS, ...redisScripts, ...scriptsOf(escrow), ...scriptsOf(eventual)];

  it(`SCRIPT LOAD accepts all ${all.length} and returns their SHA1s`, async () => {
    assert.ok(all.length >= 30, `${all.length} scripts`);
    for (const script of all) {
      const sha = await redis.client.script('LOAD', script.source).catch((error: Error) => {
        throw new Error(`${script.name}: ${error.message}`);
      });
      assert.equal(sha, script.sha, script.name);
    }
  });
});
