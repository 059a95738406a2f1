/**
 * Where reservations are recorded store-side: each one's id, key and cost until it is
 * settled or claimed after its expiry — so a reservation a process never settled (it crashed) is still
 * charged or refunded by `onExpire`, and any process can settle any reservation by its id.
 */

/** A table of pending reservations shared by every process using the same store. */
export interface ReservationRecords {
  /** Records a reservation (`record`: its key and cost, serialised by the caller). */
  add(id: string, expiresAtMs: number, record: string): Promise<void>;
  /** Takes a record out, once: undefined when it is gone (settled, or claimed as expired elsewhere). */
  take(id: string): Promise<string | undefined>;
  /** Takes out at most `max` records expired at `nowMs`, from whichever process made them. */
  takeExpired(nowMs: number, max: number): Promise<{ id: string; record: string }[]>;
}
