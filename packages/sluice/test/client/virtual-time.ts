/**
 * Virtual time for client tests over real HTTP: a manual clock shared by the client and the server,
 * and a sleep that first lets every request in flight finish, then moves the clock. So requests reach
 * the server at exactly the virtual instant they were sent, and a test of minutes runs in milliseconds.
 */
import { createManualClock, type ManualClock } from '../../src/core/clock.js';

export interface VirtualTime {
  readonly clock: ManualClock;
  /** Every wait asked for, in order. */
  readonly sleeps: number[];
  /** Sleep for the client: waits until no request is in flight, then advances the clock. */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
  /** The global fetch, counting requests in flight. */
  readonly fetch: typeof fetch;
}

export function createVirtualTime(startMs = 1_000_000): VirtualTime {
  const clock = createManualClock(startMs);
  const sleeps: number[] = [];
  let inFlight = 0;
  let idle: (() => void)[] = [];
  const settle = () => {
    if (inFlight > 0) return;
    const waiting = idle;
    idle = [];
    for (const wake of waiting) wake();
  };
  const whenIdle = () =>
    new Promise<void>((resolve) => {
      idle.push(resolve);
      // Let a request that is about to start (same tick) register first.
      setImmediate(settle);
    });
  return {
    clock,
    sleeps,
    async sleep(ms, signal) {
      signal?.throwIfAborted();
      sleeps.push(ms);
      await whenIdle();
      signal?.throwIfAborted();
      clock.advance(ms);
    },
    fetch: async (input, init) => {
      inFlight++;
      try {
        const response = await fetch(input, init);
        // Read the body now so the exchange is over before virtual time moves on.
        const body = await response.arrayBuffer();
        return new Response(response.status === 204 ? null : body, {
          status: response.status,
          statusText: response.statusText,
          headers: response.headers,
        });
      } finally {
        inFlight--;
        setImmediate(settle);
      }
    },
  };
}
