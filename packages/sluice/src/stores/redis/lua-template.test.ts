/** The templated .lua expansion (lua-template.ts): what a template's reader reads is what Redis runs. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { expandLua, type LuaWords } from './lua-template.js';

const words: LuaWords = {
  macros: { TWICE: (x) => `${x} + ${x}`, CALL: (...args) => `f(${args.join(' | ')})` },
  constants: { SIZE: 8, FORMAT: "'<i6'" },
  flags: ['ON'],
};

describe('expandLua', () => {
  it('pastes macros inline, expanding their arguments first, and writes constants in', () => {
    assert.equal(expandLua('x = TWICE(SIZE - 1)', words), 'x = 8 - 1 + 8 - 1');
    assert.equal(expandLua("CALL(a(1, 2), {3, 4}, ',', TWICE(y))", words), "f(a(1, 2) | {3, 4} | ',' | y + y)");
    assert.equal(expandLua('struct.unpack(FORMAT, blob)', words), "struct.unpack('<i6', blob)");
  });

  it('leaves comments, strings and names that are no word alone', () => {
    const text = "-- SIZE and TWICE(x) here are prose\ns = 'SIZE' .. SIZES .. NOW .. KEYS[1]";
    assert.equal(expandLua(text, words), "-- SIZE and TWICE(x) here are prose\ns = 'SIZE' .. SIZES .. NOW .. KEYS[1]");
  });

  it('keeps a tagged line only when its flag says so, without the tag', () => {
    const text = 'a = 1\nb = 2 -- if ON\nc = 3 -- unless ON\nd = 4 -- if OFF\ne = 5 -- unless OFF';
    assert.equal(expandLua(text, words), 'a = 1\nb = 2\ne = 5');
  });

  it('refuses an upper-case call that is no macro: a typo fails before Redis sees it', () => {
    assert.throws(() => expandLua('TWICEE(1)', words), /no macro TWICEE/);
  });
});
