/** The bounded copy of a JSON member's bytes that the usage scanner keeps: past the bound it gives up and says so. */

/** A capture of one member's value, byte by byte. */
export interface UsageCapture {
  /** True while a value is being copied. */
  readonly active: boolean;
  /** The value's text, once one ended within the bound. */
  readonly text: string | undefined;
  /** True when a value was longer than the bound (nothing of it is kept). */
  readonly tooLong: boolean;
  /** Starts copying (the member's key was the one wanted). */
  start(): void;
  /** Copies one byte, when active. */
  byte(byte: number): void;
  /** Ends the copy, when active: its bytes become `text`. */
  end(): void;
}

/** A capture that keeps at most `maxBytes`; `decoder` turns the bytes into text. */
export function createUsageCapture(maxBytes: number, decoder: TextDecoder): UsageCapture {
  let active = false;
  let bytes: number[] = [];
  let text: string | undefined;
  let tooLong = false;
  return {
    get active() {
      return active;
    },
    get text() {
      return text;
    },
    get tooLong() {
      return tooLong;
    },
    start() {
      active = true;
    },
    byte(byte) {
      if (!active) return;
      if (bytes.length >= maxBytes) {
        // A hostile or odd body: stop copying at once, rather than holding an unbounded member.
        tooLong = true;
        active = false;
        bytes = [];
        return;
      }
      bytes.push(byte);
    },
    end() {
      if (!active) return;
      active = false;
      text = decoder.decode(new Uint8Array(bytes)).trim();
      bytes = [];
    },
  };
}
