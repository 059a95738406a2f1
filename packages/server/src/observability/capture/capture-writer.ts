/**
 * The capture's writer: NDJSON lines queued in memory (bounded) and appended asynchronously to size-rotated
 * files, the directory kept under a byte budget by deleting the oldest files. It never blocks and never waits:
 * a full queue (a slow or stuck disk) or a failed write drops records and counts them.
 */
import { open } from 'node:fs/promises';
import { CaptureRotation, type CaptureSink } from './capture-rotation.js';

export type { CaptureSink } from './capture-rotation.js';

/** Options of {@link createCaptureWriter}. */
export interface CaptureWriterOptions {
  readonly dir: string;
  /** Most bytes of capture files in `dir`, all files together; the oldest are deleted to stay under it. */
  readonly maxBytes: number;
  /** A file is closed and the next one started past this size. @default min(32 MiB, maxBytes / 4) */
  readonly fileBytes?: number;
  /** Most bytes (UTF-8) waiting in memory for the disk; past it records are dropped. @default 4 MiB */
  readonly maxQueueBytes?: number;
  /** Longest line in bytes (UTF-8), as replay reads it; a longer one is dropped, so every file stays readable. @default 64 KiB */
  readonly maxLine?: number;
  /** The time in the files' names. @default Date.now */
  readonly now?: () => number;
  /** Opens a file for appending (tests give a slow one). @default node:fs/promises open(path, 'a') */
  readonly openFile?: (path: string) => Promise<CaptureSink>;
  /** Told about a failed write or rotation (its records are counted as dropped). */
  readonly onError?: (error: unknown) => void;
}

/** What a writer has done. */
export interface CaptureWriterStats {
  /** Records on disk (appended, not deleted or not yet). */
  written: number;
  /** Records dropped: queue full, write failed, line too long, or the writer closed. */
  dropped: number;
  /** Bytes of capture files in the directory now. */
  bytes: number;
  /** Capture files in the directory now, the one being written included. */
  files: number;
}

/** A running capture writer. */
export interface CaptureWriter {
  /** Queues one line (no newline); drops it when the queue is full. Never throws, never waits. */
  push(line: string): void;
  stats(): CaptureWriterStats;
  /** Resolves once what was queued is written (or dropped). */
  flush(): Promise<void>;
  /** Writes what is queued (waiting at most `graceMs`), then closes the file; later lines are dropped. */
  close(graceMs?: number): Promise<void>;
}

const MiB = 1024 * 1024;

async function openAppend(path: string): Promise<CaptureSink> {
  const handle = await open(path, 'a');
  return { write: (data) => handle.write(data), close: () => handle.close() };
}

/** Creates a writer into `options.dir` (created when missing). Each writer starts a file of its own. */
export function createCaptureWriter(options: CaptureWriterOptions): CaptureWriter {
  const { maxBytes } = options;
  const maxQueue = options.maxQueueBytes ?? 4 * MiB;
  const maxLine = options.maxLine ?? 64 * 1024;
  const files = new CaptureRotation({
    dir: options.dir,
    maxBytes,
    fileBytes: options.fileBytes ?? Math.max(1, Math.min(32 * MiB, Math.floor(maxBytes / 4))),
    startMs: (options.now ?? Date.now)(),
    openFile: options.openFile ?? openAppend,
  });
  let queue: string[] = [];
  let queued = 0;
  let writing: Promise<void> | undefined;
  let closed = false;
  const stats: CaptureWriterStats = { written: 0, dropped: 0, bytes: 0, files: 0 };

  /** Appends what is queued, in chunks, until the queue stays empty. */
  async function writeOut(): Promise<void> {
    while (queue.length > 0) {
      const lines = queue;
      queue = [];
      queued = 0;
      const chunk = `${lines.join('\n')}\n`;
      const bytes = Buffer.byteLength(chunk);
      try {
        if (bytes > maxBytes) throw new Error(`capture: ${bytes} bytes queued exceed the budget of ${maxBytes}`);
        await files.append(chunk, bytes);
        stats.written += lines.length;
      } catch (error) {
        stats.dropped += lines.length;
        options.onError?.(error);
      }
    }
    writing = undefined;
  }

  return {
    push(line) {
      // Bytes, not characters: replay's reader bounds a line in bytes, and a multi-byte key takes up to 3 per character.
      const bytes = Buffer.byteLength(line) + 1;
      if (closed || bytes - 1 > maxLine || queued + bytes > maxQueue) {
        stats.dropped++;
        return;
      }
      queue.push(line);
      queued += bytes;
      if (writing === undefined) writing = new Promise((resolve) => setImmediate(resolve)).then(writeOut);
    },
    stats() {
      return { ...stats, bytes: files.bytes, files: files.files };
    },
    async flush() {
      while (writing !== undefined) await writing;
    },
    async close(graceMs = 2000) {
      if (closed) return;
      await withinGrace(this.flush(), graceMs);
      closed = true;
      stats.dropped += queue.length;
      queue = [];
      if (writing === undefined) await files.close();
    },
  };
}

/** Waits for `work`, but at most `ms` (the timer never holds the process). */
async function withinGrace(work: Promise<void>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, ms);
    timer.unref();
  });
  await Promise.race([work, late]);
  clearTimeout(timer);
}
