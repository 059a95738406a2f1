/**
 * The scripts print every number they write with `fmt` (stores/redis/lua-macros.ts): '%d' for
 * integers, which Redis's Lua does far faster than '%.17g', and '%.17g' for anything else. State
 * written before that change must read the same after it, so for every integer '%d' must print
 * exactly what '%.17g' printed, and every other number must still come back exact.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { useRedis } from '../../../../test/helpers/redis-client.js';
import { fmt } from '../../src/stores/redis/lua-macros.js';

describe('Redis scripts: numbers written exactly', () => {
  const redis = useRedis();

  const printed = async (values: readonly string[]) =>
    (await redis.client.eval(
      `local sformat = string.format
local out = {}
for i, a in ipairs(ARGV) do
  local x = tonumber(a)
  out[i] = {${fmt('x')}, sformat('%.17g', x)}
end
return out`,
      0,
      ...values,
    )) as [string, string][];

  it("integers print as '%.17g' printed them, up to 2^53 either way", async () => {
    const integers = ['0', '1', '-1', '5', '250', '3600000', '1800000000000', '2700000000000000'];
    integers.push(String(2 ** 53 - 1), String(-(2 ** 53 - 1)), String(2 ** 53), '1e20', '-1e20');
    for (const [i, [ours, before]] of (await printed(integers)).entries()) {
      assert.equal(ours, before, `${integers[i]}`);
    }
  });

  it('other numbers come back exact', async () => {
    const values = ['0.5', '-0.25', '1800000000000.5', '0.1', '3.3333333333333335', '1e-7'];
    for (const [i, [ours]] of (await printed(values)).entries()) {
      assert.equal(Number(ours), Number(values[i]), `${values[i]} printed as ${ours}`);
    }
  });
});
