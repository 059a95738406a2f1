/**
 * The capture's writer: NDJSON lines queued in memory (bounded) and appended asynchronously to size-rotated
 * files, the directory kept under a byte budget by deleting the oldest files. It never blocks and never waits:
 * a full queue (a slow or stuck disk) or a failed write drops records and counts them.
 */
import { mkdir, open } from 'node:fs/promises';
import { join } from 'node:path';
import { type CaptureFile, captureFileName, deleteOldest, listCaptureFiles } from './capture-files.js';

/** Where a writer appends: one open file. */
export interface CaptureSink {
  write(data: string): Promise<unknown>;
  close(): Promise<void>;
}

/** Options of {@link createCaptureWriter}. */
export interface CaptureWriterOptions {
  readonly dir: string;
  /** Most bytes of capture files in `dir`, all files together; the oldest are deleted to stay under it. */
  readonly maxBytes: number;
  /** A file is closed and the next one started past this size. @default min(32 MiB, maxBytes / 4) */
  readonly fileBytes?: number;
  /** Most characters waiting in memory for the disk; past it records are dropped. @default 4 MiB */
  readonly maxQueueBytes?: number;
  /** Longest line (characters); a longer one is dropped, so every file stays readable. @default 64 KiB */
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
  const { dir, maxBytes } = options;
  const fileBytes = options.fileBytes ?? Math.max(1, Math.min(32 * MiB, Math.floor(maxBytes / 4)));
  const maxQueue = options.maxQueueBytes ?? 4 * MiB;
  const maxLine = options.maxLine ?? 64 * 1024;
  const openFile = options.openFile ?? openAppend;
  const now = options.now ?? Date.now;
  const startMs = now();
  let queue: string[] = [];
  let queued = 0;
  let writing: Promise<void> | undefined;
  let closed = false;
  const stats: CaptureWriterStats = { written: 0, dropped: 0, bytes: 0, files: 0 };
  // The files before the current one (oldest first), their bytes, and the file being written.
  let older: CaptureFile[] | undefined;
  let olderBytes = 0;
  let current: { path: string; sink: CaptureSink; bytes: number; records: number } | undefined;
  let seq = 0;

  async function startFile(): Promise<void> {
    if (older === undefined) {
      await mkdir(dir, { recursive: true });
      older = await listCaptureFiles(dir);
      olderBytes = older.reduce((sum, f) => sum + f.bytes, 0);
    }
    if (current !== undefined) {
      older.push({ path: current.path, bytes: current.bytes });
      olderBytes += current.bytes;
      await current.sink.close();
      current = undefined;
    }
    const path = join(dir, captureFileName(startMs, process.pid, seq++));
    current = { path, sink: await openFile(path), bytes: 0, records: 0 };
  }

  /** Makes room for `bytes` more: a new file past `fileBytes`, the oldest files deleted past `maxBytes`. */
  async function room(bytes: number): Promise<void> {
    if (current === undefined || (current.bytes > 0 && current.bytes + bytes > fileBytes)) await startFile();
    olderBytes -= await deleteOldest(older as CaptureFile[], olderBytes + (current?.bytes ?? 0), bytes, maxBytes);
  }

  async function writeOut(): Promise<void> {
    while (queue.length > 0) {
      const lines = queue;
      queue = [];
      queued = 0;
      const chunk = `${lines.join('\n')}\n`;
      const bytes = Buffer.byteLength(chunk);
      try {
        if (bytes > maxBytes) throw new Error(`capture: ${bytes} bytes queued exceed the budget of ${maxBytes}`);
        await room(bytes);
        const file = current as NonNullable<typeof current>;
        await file.sink.write(chunk);
        file.bytes += bytes;
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
      if (closed || line.length > maxLine || queued + line.length + 1 > maxQueue) {
        stats.dropped++;
        return;
      }
      queue.push(line);
      queued += line.length + 1;
      if (writing === undefined) writing = new Promise((resolve) => setImmediate(resolve)).then(writeOut);
    },
    stats() {
      const files = (older?.length ?? 0) + (current === undefined ? 0 : 1);
      return { ...stats, bytes: olderBytes + (current?.bytes ?? 0), files };
    },
    async flush() {
      while (writing !== undefined) await writing;
    },
    async close(graceMs = 2000) {
      if (closed) return;
      let timer: NodeJS.Timeout | undefined;
      const late = new Promise<void>((resolve) => {
        timer = setTimeout(resolve, graceMs);
        timer.unref();
      });
      await Promise.race([this.flush(), late]);
      clearTimeout(timer);
      closed = true;
      stats.dropped += queue.length;
      queue = [];
      if (writing === undefined) await current?.sink.close();
    },
  };
}
