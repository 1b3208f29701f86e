/**
 * The folders of the secret files a config reads (`${file:}`, docs/configuration.md, "Reload"),
 * watched so that a rotated secret reloads the config as an edit does. A folder rather than the
 * file: Kubernetes replaces a secret volume's content by swapping a `..data` link.
 */
import { type FSWatcher, watch } from 'node:fs';
import { basename, dirname } from 'node:path';
import type { Logger } from '../log.js';
import type { SecretFileRef } from './env.js';

export class SecretFolders {
  /** Secret files' folders other than the config's own, each with its watcher. */
  private readonly watchers = new Map<string, FSWatcher>();
  /** Names in the config's own folder that a change of re-reads the config. */
  private names: ReadonlySet<string>;
  private readonly configDir: string;

  constructor(
    private readonly configPath: string,
    private readonly onChange: () => void,
    private readonly log: Logger,
  ) {
    this.configDir = dirname(configPath);
    this.names = new Set([basename(configPath)]);
  }

  /** Whether a change of this name in the config's own folder concerns the config. */
  concerns(name: string): boolean {
    return this.names.has(name);
  }

  /** Watches exactly the folders of these files (the config's own folder is watched by the caller). */
  follow(files: readonly SecretFileRef[]): void {
    const folders = new Set(files.map((ref) => dirname(ref.file)));
    const inConfigDir = files.filter((ref) => dirname(ref.file) === this.configDir);
    this.names = new Set([basename(this.configPath), ...inConfigDir.map((ref) => basename(ref.file))]);
    for (const [folder, watcher] of this.watchers) {
      if (folders.has(folder)) continue;
      watcher.close();
      this.watchers.delete(folder);
    }
    for (const folder of folders) {
      if (folder !== this.configDir && !this.watchers.has(folder)) this.watchFolder(folder);
    }
  }

  close(): void {
    for (const watcher of this.watchers.values()) watcher.close();
    this.watchers.clear();
  }

  private watchFolder(folder: string): void {
    try {
      const watcher = watch(folder, this.onChange);
      watcher.unref();
      this.watchers.set(folder, watcher);
    } catch (error) {
      this.log.warn(
        { folder, error: (error as Error).message },
        'cannot watch a secret file folder; a changed secret there needs the config saved again',
      );
    }
  }
}
