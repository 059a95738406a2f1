/**
 * The capture writer's files: appends go to the current file, a new one starts past a size, and the oldest are
 * deleted to keep the directory under its byte budget.
 */
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { type CaptureFile, captureFileName, deleteOldest, listCaptureFiles } from './capture-files.js';

/** Where a writer appends: one open file. */
export interface CaptureSink {
  write(data: string): Promise<unknown>;
  close(): Promise<void>;
}

/** Where and how big. */
export interface RotationOptions {
  readonly dir: string;
  /** Most bytes of capture files in `dir`, all files together. */
  readonly maxBytes: number;
  /** A file is closed and the next one started past this size. */
  readonly fileBytes: number;
  /** The time in the files' names. */
  readonly startMs: number;
  readonly openFile: (path: string) => Promise<CaptureSink>;
}

/** The files of one writer, and the ones already in its directory (read on the first append). */
export class CaptureRotation {
  /** The files before the current one, oldest first (undefined until the directory was read). */
  private older: CaptureFile[] | undefined;
  private olderBytes = 0;
  private current: { path: string; sink: CaptureSink; bytes: number } | undefined;
  private seq = 0;

  constructor(private readonly options: RotationOptions) {}

  /** Bytes of capture files in the directory now. */
  get bytes(): number {
    return this.olderBytes + (this.current?.bytes ?? 0);
  }

  /** Capture files in the directory now, the one being written included. */
  get files(): number {
    return (this.older?.length ?? 0) + (this.current === undefined ? 0 : 1);
  }

  /** Appends `chunk` (`bytes` long) after making room for it. */
  async append(chunk: string, bytes: number): Promise<void> {
    await this.room(bytes);
    const file = this.current as NonNullable<typeof this.current>;
    await file.sink.write(chunk);
    file.bytes += bytes;
  }

  /** Closes the current file (it stays counted: it is on disk). */
  async close(): Promise<void> {
    await this.current?.sink.close();
  }

  /** Makes room for `bytes` more: a new file past `fileBytes`, the oldest files deleted past `maxBytes`. */
  private async room(bytes: number): Promise<void> {
    const { current } = this;
    if (current === undefined || (current.bytes > 0 && current.bytes + bytes > this.options.fileBytes)) {
      await this.startFile();
    }
    const older = this.older as CaptureFile[];
    this.olderBytes -= await deleteOldest(older, this.bytes, bytes, this.options.maxBytes);
  }

  private async startFile(): Promise<void> {
    const { dir, startMs, openFile } = this.options;
    if (this.older === undefined) {
      await mkdir(dir, { recursive: true });
      this.older = await listCaptureFiles(dir);
      this.olderBytes = this.older.reduce((sum, f) => sum + f.bytes, 0);
    }
    const { current } = this;
    if (current !== undefined) {
      this.older.push({ path: current.path, bytes: current.bytes });
      this.olderBytes += current.bytes;
      await current.sink.close();
      this.current = undefined;
    }
    const path = join(dir, captureFileName(startMs, process.pid, this.seq++));
    this.current = { path, sink: await openFile(path), bytes: 0 };
  }
}
