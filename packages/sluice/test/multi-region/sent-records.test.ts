/**
 * What a peer was last sent of each lease record (stores/multi-region/sent-records.ts): a record is
 * held when nothing a push carries changed and its proof is fresh, never while it asks for units.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { resolvePolicy } from '../../src/core/policy.js';
import type { RecordPart } from '../../src/stores/multi-region/escrow-sync.js';
import { SentRecords } from '../../src/stores/multi-region/sent-records.js';

const policy = resolvePolicy({ algorithm: 'fixed-window', limit: 90, period: 1000 });
/** The peer's answer: its incarnation and the units it has given this region so far. */
const ANSWER = { peerInc: 'us-1', received: 0 };

function part(over: Partial<RecordPart> = {}, gift = { units: 5, to: 'us-1', at: 100 }): RecordPart {
  const given = new Map([['us', gift]]);
  return { policy, inc: 'eu-1', share: 25, demand: 10, want: 0, given, received: new Map([['us', 0]]), ...over };
}

describe('sent records', () => {
  it('holds a record sent as it is, until its renewal time, for that peer only', () => {
    const sent = new SentRecords(10, 100);
    assert.equal(sent.holds('us', 'k', part(), 0), false, 'never sent');
    sent.sent('us', 'k', part(), 1000, 800, ANSWER);
    assert.equal(
      sent.holds('us', 'k', part({ share: 20, demand: 40 }), 1399),
      true,
      'share and demand are not kept there',
    );
    const both = new Map([
      ['us', { units: 5, to: 'us-1', at: 100 }],
      ['ap', { units: 2, to: 'ap-1', at: 100 }],
    ]);
    assert.equal(sent.holds('ap', 'k', part({ given: both }), 1001), false, 'another peer');
    assert.equal(sent.holds('us', 'k2', part(), 1001), false, 'another record');
    assert.equal(sent.holds('us', 'k', part(), 1800), false, 'renewed at the latest after refreshMs');
  });

  it('renews at a random point of the second half of refreshMs', () => {
    const sent = new SentRecords(1000, 100);
    const until: number[] = [];
    for (let i = 0; i < 200; i++) {
      sent.sent('us', `k${i}`, part(), 0, 1000, ANSWER);
      let t = 0;
      while (sent.holds('us', `k${i}`, part(), t)) t += 10;
      until.push(t);
    }
    assert.ok(Math.min(...until) >= 500, String(Math.min(...until)));
    assert.ok(Math.max(...until) <= 1000, String(Math.max(...until)));
    assert.ok(Math.max(...until) - Math.min(...until) >= 300, 'spread, not all at once');
  });

  it('does not hold a record that asks, changed incarnation, or gave the peer something new', () => {
    const sent = new SentRecords(10, 100);
    sent.sent('us', 'k', part(), 0, 1_000_000, ANSWER);
    assert.equal(sent.holds('us', 'k', part({ want: 3 }), 1), false, 'a first ask');
    assert.equal(sent.holds('us', 'k', part({ inc: 'eu-2' }), 1), false, 'a new incarnation');
    assert.equal(sent.holds('us', 'k', part({}, { units: 6, to: 'us-1', at: 100 }), 1), false, 'more units');
    assert.equal(sent.holds('us', 'k', part({}, { units: 5, to: 'us-2', at: 100 }), 1), false, 'to a new incarnation');
    assert.equal(sent.holds('us', 'k', part({}, { units: 5, to: 'us-1', at: 101 }), 1), false, 'a later transfer');
    const got = new Map([['us', 2]]);
    assert.equal(sent.holds('us', 'k', part({ given: new Map(), received: got }), 1), false, 'nothing given now');
  });

  it('does not send a record that moved no units with the peer until it asks', () => {
    const sent = new SentRecords(10, 100);
    const idle = { units: 0, to: '', at: 0 };
    assert.equal(sent.holds('us', 'k', part({}, idle), 0), true, 'never sent, nothing to tell');
    assert.equal(sent.holds('us', 'k', part({}, idle), 1e12), true, 'no proof to renew');
    assert.equal(sent.holds('us', 'k', part({ inc: 'eu-2' }, idle), 1), true, 'a new incarnation, nothing moved');
    assert.equal(sent.holds('us', 'k', part({ want: 3 }, idle), 1), false, 'an ask');
    const got = new Map([['us', 4]]);
    assert.equal(sent.holds('us', 'k', part({ received: got }, idle), 1), false, 'units received: proof to keep');
    assert.equal(sent.holds('ap', 'k', part({ received: got }, idle), 1), true, 'received from another peer');
  });

  it('with no units given, the incarnation a record names for the peer is not news (first answer)', () => {
    const sent = new SentRecords(10, 100);
    const got = new Map([['us', 4]]);
    sent.sent('us', 'k', part({ received: got }, { units: 0, to: '', at: 0 }), 0, 1_000_000, ANSWER);
    assert.equal(sent.holds('us', 'k', part({ received: got }, { units: 0, to: 'us-1', at: 0 }), 1), true);
    assert.equal(sent.holds('us', 'k', part({ received: got }, { units: 1, to: 'us-1', at: 5 }), 1), false, 'a unit');
  });

  it('forgets the record sent longest ago past maxKeys', () => {
    const sent = new SentRecords(2, 100);
    sent.sent('us', 'a', part(), 0, 1000, ANSWER);
    sent.sent('us', 'b', part(), 0, 1000, ANSWER);
    sent.sent('us', 'a', part(), 1, 1000, ANSWER); // sent again: now the newest
    sent.sent('us', 'c', part(), 2, 1000, ANSWER);
    assert.equal(sent.holds('us', 'b', part(), 3), false, 'the oldest went');
    assert.equal(sent.holds('us', 'a', part(), 3), true);
    assert.equal(sent.holds('us', 'c', part(), 3), true);
  });

  it('an ask the peer gave nothing for skips 1, 2, 4, then at most 8 syncs; a gift ends the wait', () => {
    const sent = new SentRecords(10, 100);
    const asking = part({ want: 10 });
    // The syncs (every 100 ms) at which an ask goes, while the peer never gives anything.
    const asks: number[] = [];
    for (let t = 0; t <= 3000; t += 100) {
      if (sent.holds('us', 'k', asking, t)) continue;
      asks.push(t / 100);
      sent.sent('us', 'k', asking, t, 1_000_000, { peerInc: 'us-1', received: 7 });
    }
    // The first ask sets what the peer had given (7); the second finds nothing more, and so on.
    assert.deepEqual(asks, [0, 1, 3, 6, 11, 20, 29]);
    // Units received (the running total grew): the next sync asks again.
    const t = 3000;
    sent.sent('us', 'k', asking, t, 1_000_000, { peerInc: 'us-1', received: 9 });
    assert.equal(sent.holds('us', 'k', asking, t + 100), false, 'asks at the next sync');
    // A peer whose record is new (another incarnation) is asked at the next sync too.
    sent.sent('us', 'k', asking, t, 1_000_000, { peerInc: 'us-1', received: 9 });
    assert.equal(sent.holds('us', 'k', asking, t + 100), true, 'nothing given: waits');
    sent.sent('us', 'k', asking, t, 1_000_000, { peerInc: 'us-2', received: 0 });
    assert.equal(sent.holds('us', 'k', asking, t + 100), false);
    // Whatever the wait, news is sent at once: units given to the peer, a renewal due.
    sent.sent('us', 'k', asking, t, 1_000_000, { peerInc: 'us-2', received: 0 });
    sent.sent('us', 'k', asking, t, 1_000_000, { peerInc: 'us-2', received: 0 });
    assert.equal(sent.holds('us', 'k', asking, t + 100), true);
    assert.equal(sent.holds('us', 'k', part({ want: 10 }, { units: 6, to: 'us-1', at: 100 }), t + 100), false);
  });
});
