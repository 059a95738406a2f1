/** Where sluice reads the time, in integer milliseconds since the epoch. Injected in tests. */
export interface Clock {
  now(): number;
}

/** The wall clock (`Date.now`). */
export const systemClock: Clock = { now: Date.now };

/** A clock that only moves when told to: for tests and simulations. */
export interface ManualClock extends Clock {
  /** Moves the clock forward by `ms`. */
  advance(ms: number): void;
  /** Sets the clock to `ms`. */
  set(ms: number): void;
}

/**
 * Creates a manual clock starting at `startMs`.
 * @example const clock = createManualClock(0); clock.advance(1000);
 */
export function createManualClock(startMs = 0): ManualClock {
  let now = startMs;
  return {
    now: () => now,
    advance: (ms) => {
      now += ms;
    },
    set: (ms) => {
      now = ms;
    },
  };
}
