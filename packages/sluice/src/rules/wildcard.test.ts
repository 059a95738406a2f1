import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { compileWildcard, isWildcard } from './wildcard.js';

describe('wildcard', () => {
  it('* matches any run of characters, anywhere, any number of times', () => {
    const cases: [string, string, boolean][] = [
      ['bar*', 'bar', true],
      ['bar*', 'barn', true],
      ['bar*', 'xbar', false],
      ['bar*b', 'barb', true],
      ['bar*b', 'bar123b', true],
      ['bar*b', 'xbarb', false],
      ['bar*b', 'barbx', false],
      ['*', '', true],
      ['*.example.com', 'a.b.example.com', true],
      ['*.example.com', 'example.com', false],
      ['a*b*c', 'abc', true],
      ['a*b*c', 'a-b-c', true],
      ['a*b*c', 'acb', false],
      ['/v1/(x)*', '/v1/(x)y', true],
      ['/v1/(x)*', '/v1/xy', false],
      ['line*', 'line\nbreak', true],
    ];
    for (const [pattern, value, expected] of cases) {
      assert.equal(compileWildcard(pattern).test(value), expected, `${pattern} vs ${JSON.stringify(value)}`);
    }
  });

  it('knows a wildcard value', () => {
    assert.equal(isWildcard('a*'), true);
    assert.equal(isWildcard('a'), false);
    assert.equal(isWildcard(undefined), false);
  });
});
