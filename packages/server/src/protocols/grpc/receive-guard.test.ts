import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createReceiveGuard, DEFAULT_RECEIVE_LIMITS, receiveResolutionMs } from './receive-guard.js';

const never = () => assert.fail('no timeout expected');

describe('createReceiveGuard', () => {
  it('cuts an unfinished call at most 0.2 s and 10% after its timeout (two sweeps late at worst)', () => {
    for (const timeoutMs of [DEFAULT_RECEIVE_LIMITS.messageTimeoutMs, 2000, 60_000, 3_600_000, 100]) {
      const latest = timeoutMs + 2 * receiveResolutionMs(timeoutMs);
      const allowed = Math.min(timeoutMs + 200, Math.max(timeoutMs * 1.1, timeoutMs + 20));
      assert.ok(latest <= allowed, `${timeoutMs} ms may wait ${latest} ms`);
    }
  });

  const limits = {
    maxMessageBytes: 100,
    maxConnectionBufferBytes: 250,
    maxTotalBufferBytes: 400,
    messageTimeoutMs: 60_000,
  };

  it('refuses a message over its size, counting the 5-byte prefix', () => {
    const guard = createReceiveGuard(limits);
    const r = guard.open({}, never);
    assert.equal(r.add(105), undefined);
    assert.equal(r.add(1), 'too-large');
    assert.equal(guard.heldBytes, 0, 'a refused call gives its bytes back');
  });

  it('bounds the bytes of one connection and of all connections, and gives them back on release', () => {
    const guard = createReceiveGuard(limits);
    const a = {};
    const b = {};
    const calls = [guard.open(a, never), guard.open(a, never), guard.open(a, never)];
    assert.equal(calls[0]?.add(100), undefined);
    assert.equal(calls[1]?.add(100), undefined);
    assert.equal(calls[2]?.add(100), 'connection-budget');
    const others = [guard.open(b, never), guard.open(b, never), guard.open({}, never)];
    assert.equal(others[0]?.add(100), undefined);
    assert.equal(others[1]?.add(100), undefined);
    assert.equal(guard.heldBytes, 400);
    assert.equal(others[2]?.add(1), 'total-budget');
    calls[0]?.release();
    calls[0]?.release();
    assert.equal(guard.heldBytes, 300, 'release is idempotent');
    assert.equal(guard.open(a, never).add(100), undefined);
  });

  it('times out a reception that does not finish, once, and not one that did', async () => {
    const guard = createReceiveGuard({ ...limits, messageTimeoutMs: 20 });
    let finished = 0;
    const done = guard.open({}, () => finished++);
    done.release();
    const timedOut = new Promise<void>((resolve) => {
      const r = guard.open({}, resolve);
      r.add(10);
    });
    // The guard's sweep timer is unref'd (it must not hold a process open): hold this one open meanwhile.
    const hold = setInterval(() => {}, 1000);
    await timedOut;
    clearInterval(hold);
    assert.equal(finished, 0);
    assert.equal(guard.heldBytes, 0);
  });
});
