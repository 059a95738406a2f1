/**
 * The directories `watchRules` watches: each directory given and the directory of each file given (so editors that
 * replace files by renaming, and Kubernetes ConfigMap symlink swaps, are seen), watched again once they reappear.
 */
import { type FSWatcher, readdirSync, statSync, watch } from 'node:fs';
import { dirname, join, resolve } from 'node:path';

/** Watchers of the directories of some paths, none keeping the process alive. */
export class DirectoryWatchers {
  private readonly watchers = new Map<string, FSWatcher>();

  /**
   * `depth`: levels of subdirectories of each directory given to watch too (what `readSources` reads with
   * `subdirectories`); 0 watches only the directories themselves.
   */
  constructor(
    private readonly paths: readonly string[],
    private readonly onEvent: () => void,
    private readonly depth = 0,
  ) {}

  /**
   * Watches every target directory not watched yet (one not there yet is tried again on the next call) and
   * stops watching those gone. Returns true when it started watching a directory it did not watch before.
   */
  ensure(): boolean {
    const targets = this.targets();
    for (const [dir, w] of this.watchers) {
      // A removed subdirectory: its watch is dead even if one of that name comes back.
      if (!targets.includes(dir)) {
        w.close();
        this.watchers.delete(dir);
      }
    }
    let added = false;
    for (const dir of targets) {
      if (this.watchers.has(dir)) continue;
      try {
        const w = watch(dir, { persistent: false }, this.onEvent);
        // A watched directory that disappears ends its watcher; the next reload tries to watch it again.
        w.on('error', () => {
          w.close();
          this.watchers.delete(dir);
        });
        this.watchers.set(dir, w);
        added = true;
      } catch {
        // Not there (yet): the next reload tries again.
      }
    }
    return added;
  }

  close(): void {
    for (const w of this.watchers.values()) w.close();
    this.watchers.clear();
  }

  /** Directories to watch: each directory given (with its subdirectories to `depth`), and the directory of each file given. */
  private targets(): string[] {
    const dirs = this.paths.flatMap((p) => {
      const full = resolve(p);
      try {
        return statSync(full).isDirectory() ? [full, ...subdirectories(full, this.depth)] : [dirname(full)];
      } catch {
        return [dirname(full)];
      }
    });
    return [...new Set(dirs)];
  }
}

/** The subdirectories `readSources` descends into (not dot-directories, not symlinks), `depth` levels down. */
function subdirectories(dir: string, depth: number): string[] {
  if (depth <= 0) return [];
  try {
    return readdirSync(dir, { withFileTypes: true })
      .filter((e) => e.isDirectory() && !e.name.startsWith('.'))
      .flatMap((e) => [join(dir, e.name), ...subdirectories(join(dir, e.name), depth - 1)]);
  } catch {
    return [];
  }
}
