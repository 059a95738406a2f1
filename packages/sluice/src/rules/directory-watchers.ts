/**
 * The directories `watchRules` watches: each directory given and the directory of each file given (so editors that
 * replace files by renaming, and Kubernetes ConfigMap symlink swaps, are seen), watched again once they reappear.
 */
import { type FSWatcher, statSync, watch } from 'node:fs';
import { dirname, resolve } from 'node:path';

/** Watchers of the directories of some paths, none keeping the process alive. */
export class DirectoryWatchers {
  private readonly watchers = new Map<string, FSWatcher>();

  constructor(
    private readonly paths: readonly string[],
    private readonly onEvent: () => void,
  ) {}

  /** Watches every target directory not watched yet (one not there yet is tried again on the next call). */
  ensure(): void {
    for (const dir of this.targets()) {
      if (this.watchers.has(dir)) continue;
      try {
        const w = watch(dir, { persistent: false }, this.onEvent);
        // A watched directory that disappears ends its watcher; the next reload tries to watch it again.
        w.on('error', () => {
          w.close();
          this.watchers.delete(dir);
        });
        this.watchers.set(dir, w);
      } catch {
        // Not there (yet): the next reload tries again.
      }
    }
  }

  close(): void {
    for (const w of this.watchers.values()) w.close();
    this.watchers.clear();
  }

  /** Directories to watch: each directory given, and the directory of each file given. */
  private targets(): string[] {
    const dirs = this.paths.map((p) => {
      const full = resolve(p);
      try {
        return statSync(full).isDirectory() ? full : dirname(full);
      } catch {
        return dirname(full);
      }
    });
    return [...new Set(dirs)];
  }
}
