import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it, mock } from 'node:test';
import { type DeadlineEntry, DeadlineList } from './deadlines.js';

function entry(name: string, expired: string[]): DeadlineEntry {
  return {
    deadlineAt: 0,
    deadlinePrev: undefined,
    deadlineNext: undefined,
    expire: () => expired.push(name),
  };
}

describe('DeadlineList', () => {
  let now = 1_000_000;
  const clock = () => now;
  /** Moves the clock and the timers on together. */
  const advance = (ms: number) => {
    now += ms;
    mock.timers.tick(ms);
  };
  beforeEach(() => mock.timers.enable({ apis: ['setInterval'] }));
  afterEach(() => mock.timers.reset());

  it('expires entries once their time has passed, never early, in the order they were added', () => {
    const expired: string[] = [];
    const list = new DeadlineList(1000, 100, clock);
    list.add(entry('a', expired));
    advance(500);
    list.add(entry('b', expired));
    advance(499);
    assert.deepEqual(expired, []);
    advance(301); // a: 1,300 ms after it was added — at most two resolutions late
    assert.deepEqual(expired, ['a']);
    advance(500);
    assert.deepEqual(expired, ['a', 'b']);
    list.close();
  });

  it('never expires a removed entry, wherever it is in the list', () => {
    const expired: string[] = [];
    const list = new DeadlineList(1000, 100, clock);
    const a = entry('a', expired);
    const b = entry('b', expired);
    const c = entry('c', expired);
    list.add(a);
    list.add(b);
    list.add(c);
    list.remove(b);
    list.remove(b); // twice is harmless
    list.remove(a);
    advance(1500);
    assert.deepEqual(expired, ['c']);
    list.close();
  });

  it('stops its timer when empty and starts it again for the next entry', () => {
    const expired: string[] = [];
    const list = new DeadlineList(1000, 100, clock);
    const a = entry('a', expired);
    list.add(a);
    list.remove(a);
    advance(5000);
    list.add(entry('b', expired));
    advance(999);
    assert.deepEqual(expired, []);
    advance(201);
    assert.deepEqual(expired, ['b']);
    list.close();
  });
});
