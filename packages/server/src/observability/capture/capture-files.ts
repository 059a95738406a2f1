/** The capture directory's files: their names (in write order), sizes, and deleting the oldest to stay within a byte budget. */
import { readdir, stat, unlink } from 'node:fs/promises';
import { join } from 'node:path';

/** A capture file's name: `capture-<start ms, 15 digits>-<process id>-<sequence, 6 digits>.ndjson`, sorting in write order. */
const NAME = /^capture-\d{15}-\d+-\d{6}\.ndjson$/;

/** The name of the `seq`th file of a writer started at `startMs` in process `pid`. */
export function captureFileName(startMs: number, pid: number, seq: number): string {
  return `capture-${String(Math.floor(startMs)).padStart(15, '0')}-${pid}-${String(seq).padStart(6, '0')}.ndjson`;
}

/** One capture file already on disk. */
export interface CaptureFile {
  readonly path: string;
  readonly bytes: number;
}

/** The capture files in `dir`, oldest first (other files are left alone). */
export async function listCaptureFiles(dir: string): Promise<CaptureFile[]> {
  const names = (await readdir(dir)).filter((n) => NAME.test(n)).sort();
  const files: CaptureFile[] = [];
  for (const name of names) {
    const path = join(dir, name);
    try {
      files.push({ path, bytes: (await stat(path)).size });
    } catch {
      // Deleted meanwhile (another process's rotation): nothing to count.
    }
  }
  return files;
}

/**
 * Deletes the oldest of `files` (removing them from the list) until `total - freed + incoming <= maxBytes`
 * or none is left. Returns the bytes freed.
 */
export async function deleteOldest(
  files: CaptureFile[],
  total: number,
  incoming: number,
  maxBytes: number,
): Promise<number> {
  let freed = 0;
  while (total - freed + incoming > maxBytes) {
    const oldest = files.shift();
    if (oldest === undefined) break;
    try {
      await unlink(oldest.path);
    } catch {
      // Gone already: its bytes are free all the same.
    }
    freed += oldest.bytes;
  }
  return freed;
}
