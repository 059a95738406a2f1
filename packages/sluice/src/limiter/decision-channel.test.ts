// The `sluice:decision` diagnostics channel: what a multi-limit limiter publishes on allow, deny, degraded and error, and nothing without a subscriber.
import assert from 'node:assert/strict';
import diagnostics from 'node:diagnostics_channel';
import { afterEach, describe, it } from 'node:test';
import { createManualClock } from '../core/clock.js';
import { SluiceError } from '../core/errors.js';
import { createMemoryStore } from '../stores/memory/memory-store.js';
import type { Store } from '../stores/store.js';
import { createLimiter } from './create-limiter.js';
import { DECISION_CHANNEL, type DecisionMessage, decisionChannel } from './decision-channel.js';

const messages: DecisionMessage[] = [];
const collect = (message: unknown) => messages.push(message as DecisionMessage);

afterEach(() => {
  diagnostics.unsubscribe(DECISION_CHANNEL, collect);
  messages.length = 0;
});

function twoLimits(store?: Store, fail?: 'open' | 'closed') {
  return createLimiter({
    name: 'api',
    clock: createManualClock(0),
    ...(store === undefined ? {} : { store }),
    ...(fail === undefined ? {} : { fail }),
    limits: [
      { name: 'second', limit: 2, period: '1s' },
      { name: 'day', limit: 100, period: '1d' },
    ],
  });
}

/** A memory store whose batch checks fail as a lost database would. */
function brokenStore(): Store {
  const store = createMemoryStore();
  return Object.assign(Object.create(store) as Store, {
    checkMany() {
      throw new Error('connection reset');
    },
  });
}

/** A memory store that answers through promises, as Redis does. */
function asyncStore(): Store {
  const store = createMemoryStore();
  return Object.assign(Object.create(store) as Store, {
    synchronous: false,
    check: async (...args: Parameters<Store['check']>) => store.check(...args),
    checkMany: async (...args: Parameters<Store['checkMany']>) => store.checkMany(...args),
  });
}

describe('sluice:decision', () => {
  it('publishes each check of a multi-limit limiter: allowed, then rejected by the limit that binds', async () => {
    diagnostics.subscribe(DECISION_CHANNEL, collect);
    const limiter = twoLimits();
    await limiter.check('user:1');
    limiter.checkSync('user:1', { cost: 1 });
    await limiter.check('user:1');
    assert.equal(messages.length, 3);
    const [first, , third] = messages as [DecisionMessage, DecisionMessage, DecisionMessage];
    assert.equal(first.name, 'api');
    assert.deepEqual(first.limits, ['second', 'day']);
    assert.equal(first.key, 'user:1');
    assert.equal(first.cost, 1);
    assert.equal(first.decision?.allowed, true);
    assert.equal(first.error, undefined);
    assert.deepEqual(
      first.decision?.results?.map((r) => [r.name, r.decision.allowed]),
      [
        ['second', true],
        ['day', true],
      ],
    );
    assert.equal(third.decision?.allowed, false);
    assert.deepEqual(
      third.decision?.results?.map((r) => [r.name, r.decision.allowed]),
      [
        ['second', false],
        ['day', true],
      ],
    );
  });

  it('publishes the failure policy’s degraded answer when the store fails', async () => {
    diagnostics.subscribe(DECISION_CHANNEL, collect);
    const decision = await twoLimits(brokenStore(), 'closed').check('user:1');
    assert.equal(decision.allowed, false);
    assert.equal(messages.length, 1);
    assert.equal(messages[0]?.decision?.degraded, true);
  });

  it('publishes the error a check throws, and the check still throws it', async () => {
    diagnostics.subscribe(DECISION_CHANNEL, collect);
    const limiter = twoLimits();
    const bad = { second: 7 } as unknown as string;
    await assert.rejects(limiter.check(bad), { code: 'ERR_SLUICE_INVALID_KEY' });
    assert.throws(() => limiter.checkSync(bad), { code: 'ERR_SLUICE_INVALID_KEY' });
    assert.equal(messages.length, 2);
    for (const m of messages) {
      assert.equal(m.decision, undefined);
      assert.ok(m.error instanceof SluiceError);
    }
  });

  it('builds and publishes nothing while nobody subscribes', async () => {
    // Counted on the channel object itself: Node swaps a channel's prototype when it gains or loses
    // subscribers, so a mock that restores an own `publish` would shadow the active one afterwards.
    let published = 0;
    const channel = decisionChannel as { publish(message: unknown): void };
    channel.publish = function (this: unknown, message: unknown) {
      published++;
      (Object.getPrototypeOf(channel) as typeof channel).publish.call(this, message);
    };
    try {
      const limiter = twoLimits();
      assert.equal(decisionChannel.hasSubscribers, false);
      await limiter.check('user:1');
      limiter.checkSync('user:1');
      assert.equal(published, 0);
      diagnostics.subscribe(DECISION_CHANNEL, collect);
      await limiter.check('user:1');
      assert.equal(published, 1, 'the same limiter publishes once subscribed');
      diagnostics.unsubscribe(DECISION_CHANNEL, collect);
      limiter.checkSync('user:2');
      assert.equal(published, 1);
    } finally {
      delete (channel as { publish?: unknown }).publish;
    }
  });

  it('publishes for a single-limit limiter on a synchronous store, naming its one limit', async () => {
    diagnostics.subscribe(DECISION_CHANNEL, collect);
    const limiter = createLimiter({ limit: 1, period: '1m', clock: createManualClock(0) });
    await limiter.check('k');
    assert.equal(limiter.checkSync('k').allowed, false);
    assert.deepEqual(
      messages.map((m) => [m.name, m.limits.length, m.decision?.allowed]),
      [
        [undefined, 1, true],
        [undefined, 1, false],
      ],
    );
  });

  it('publishes for a limiter on an asynchronous store once each check settles, allowed and rejected', async () => {
    diagnostics.subscribe(DECISION_CHANNEL, collect);
    const limiter = createLimiter({ limit: 1, period: '1m', clock: createManualClock(0), store: asyncStore() });
    const first = limiter.check('k');
    assert.equal(messages.length, 0, 'nothing before the store answers');
    assert.equal((await first).allowed, true);
    assert.equal((await limiter.check('k')).allowed, false);
    assert.deepEqual(
      messages.map((m) => [m.limits.length, m.cost, m.decision?.allowed]),
      [
        [1, 1, true],
        [1, 1, false],
      ],
    );
  });
});
