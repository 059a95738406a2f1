import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { HealthStatus } from './health-service.js';
import { createHealthWatch, type WatchStatus } from './health-watch.js';

/** A sink that records writes and reports a full buffer while `full` is set. */
function sink() {
  const written: WatchStatus[] = [];
  let ended = 0;
  const state = { full: false };
  return {
    written,
    state,
    ended: () => ended,
    sink: {
      write(status: WatchStatus) {
        written.push(status);
        return !state.full;
      },
      end() {
        ended++;
      },
    },
  };
}

const settle = () => new Promise((resolve) => setImmediate(resolve));

describe('health Watch hub', () => {
  it('the status at once, then only changes; SERVICE_UNKNOWN for unknown names', async () => {
    let now: HealthStatus = 'SERVING';
    const watch = createHealthWatch({ check: async (s) => (s === 'ratelimit' ? now : undefined) });
    const a = sink();
    const u = sink();
    watch.open('ratelimit', 'c1', a.sink);
    watch.open('other', 'c1', u.sink);
    await settle();
    await watch.refresh();
    now = 'NOT_SERVING';
    await watch.refresh();
    await watch.refresh();
    assert.deepEqual(a.written, ['SERVING', 'NOT_SERVING']);
    assert.deepEqual(u.written, ['SERVICE_UNKNOWN']);
    watch.close();
  });

  it('a watcher that does not read holds one pending status, the newest, whatever changes meanwhile', async () => {
    let now: HealthStatus = 'SERVING';
    const watch = createHealthWatch({ check: async () => now });
    const slow = sink();
    const handle = watch.open('', 'c1', slow.sink);
    await settle();
    slow.state.full = true;
    now = 'NOT_SERVING';
    await watch.refresh(); // written, and the buffer reports full
    for (let i = 0; i < 1000; i++) {
      now = i % 2 === 0 ? 'SERVING' : 'NOT_SERVING';
      await watch.refresh();
    }
    assert.deepEqual(slow.written, ['SERVING', 'NOT_SERVING']);
    now = 'SERVING';
    await watch.refresh();
    slow.state.full = false;
    handle?.drained();
    assert.deepEqual(slow.written, ['SERVING', 'NOT_SERVING', 'SERVING']);
    watch.close();
  });

  it('caps per connection and in all; a closed watch frees its slot; close() says NOT_SERVING and ends every call', async () => {
    const watch = createHealthWatch({ check: async () => 'SERVING', maxWatches: 3, maxWatchesPerConnection: 2 });
    const sinks = [sink(), sink(), sink(), sink()];
    const first = watch.open('', 'c1', sinks[0]!.sink);
    assert.ok(watch.open('', 'c1', sinks[1]!.sink));
    assert.equal(watch.open('', 'c1', sinks[2]!.sink), undefined);
    assert.ok(watch.open('', 'c2', sinks[2]!.sink));
    assert.equal(watch.open('', 'c3', sinks[3]!.sink), undefined);
    first?.close();
    first?.close();
    assert.equal(watch.size, 2);
    assert.ok(watch.open('', 'c3', sinks[3]!.sink));
    await settle();
    watch.close();
    assert.equal(watch.size, 0);
    for (const s of sinks.slice(1)) {
      assert.deepEqual(s.written, ['SERVING', 'NOT_SERVING']);
      assert.equal(s.ended(), 1);
    }
    assert.equal(watch.open('', 'c9', sink().sink), undefined);
  });
});
