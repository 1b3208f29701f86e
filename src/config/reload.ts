/**
 * Watches the config file and re-reads it when it changes. An invalid edit is
 * reported (every problem, by key path) and changes nothing; a valid one is
 * handed to `apply`. The folder is watched rather than the file, because
 * editors save by replacing the file.
 *
 * The folders of the secret files the config reads (`${file:}`,
 * docs/configuration.md) are watched too, so a rotated secret applies like an
 * edit: any change in such a folder re-reads the config, since Kubernetes
 * replaces a secret volume's content by swapping a `..data` link, not the file.
 *
 * A burst of changes is one reload: 200 ms after the last change, or 2 s after
 * the first one not yet reloaded when the changes never pause (a file written
 * continuously). Reloads never overlap: a change during one is reloaded after it.
 */
import { type FSWatcher, watch } from 'node:fs';
import { basename, dirname } from 'node:path';
import type { Logger } from '../log.js';
import { type DebounceTimes, debounce } from '../loops/debounce.js';
import type { TimerClock } from '../util/clock.js';
import type { SecretFileRef } from './env.js';
import { loadConfigFile } from './load.js';
import type { ResolvedConfig } from './resolved.js';

/** docs/configuration.md, "Reload": quiet for 200 ms, or 2 s after the first unreloaded change. */
export const RELOAD_TIMES: DebounceTimes = { quietMs: 200, maxWaitMs: 2_000 };

export interface WatchOptions {
  times?: DebounceTimes;
  clock?: TimerClock;
}

export function watchConfigFile(
  path: string,
  apply: (config: ResolvedConfig, warnings: string[]) => Promise<void>,
  log: Logger,
  options: WatchOptions = {},
): () => void {
  let watcher: FSWatcher | undefined;
  let stopped = false;
  /** The reload under way, and whether a change came while it ran. */
  let reloading: Promise<void> | undefined;
  let again = false;
  const configDir = dirname(path);
  /** Secret files' folders other than the config's own, each with its watcher. */
  const secretFolders = new Map<string, FSWatcher>();
  /** Names in the config's own folder that a change of re-reads the config. */
  let namesToWatch = new Set([basename(path)]);
  const reloadOnce = () => {
    if (stopped) return;
    if (reloading) {
      again = true;
      return;
    }
    reloading = reload().finally(() => {
      reloading = undefined;
      if (again) {
        again = false;
        reloadOnce();
      }
    });
  };
  const schedule = debounce(reloadOnce, options.times ?? RELOAD_TIMES, options.clock);
  const watchSecrets = (files: readonly SecretFileRef[]) => {
    const folders = new Set(files.map((ref) => dirname(ref.file)));
    namesToWatch = new Set([
      basename(path),
      ...files.filter((ref) => dirname(ref.file) === configDir).map((ref) => basename(ref.file)),
    ]);
    for (const [folder, folderWatcher] of secretFolders) {
      if (folders.has(folder)) continue;
      folderWatcher.close();
      secretFolders.delete(folder);
    }
    for (const folder of folders) {
      if (folder === configDir || secretFolders.has(folder)) continue;
      try {
        const folderWatcher = watch(folder, schedule);
        folderWatcher.unref();
        secretFolders.set(folder, folderWatcher);
      } catch (error) {
        log.warn(
          { folder, error: (error as Error).message },
          'cannot watch a secret file folder; a changed secret there needs the config saved again',
        );
      }
    }
  };
  const reload = async () => {
    let loaded: ReturnType<typeof loadConfigFile>;
    try {
      loaded = loadConfigFile(path);
    } catch (error) {
      log.error(
        { error: (error as Error).message },
        'config reload failed; keeping the current configuration',
      );
      return;
    }
    if (!loaded.ok) {
      log.error({ problems: loaded.problems }, 'config reload rejected; keeping the current configuration');
      return;
    }
    watchSecrets(loaded.secretFiles);
    try {
      await apply(loaded.config, loaded.warnings);
    } catch (error) {
      log.error(
        { error: (error as Error).message },
        'config reload rejected; keeping the current configuration',
      );
    }
  };
  try {
    watcher = watch(configDir, (_event, file) => {
      if (file !== null && !namesToWatch.has(file)) return;
      schedule();
    });
    watcher.unref();
  } catch (error) {
    log.warn({ error: (error as Error).message }, 'cannot watch the config file; edits need a restart');
  }
  // The secret files of the config as it was started with.
  try {
    const initial = loadConfigFile(path);
    if (initial.ok) watchSecrets(initial.secretFiles);
  } catch {
    // The config was read a moment ago to start; if it is gone now, the next edit tells.
  }
  return () => {
    stopped = true;
    schedule.cancel();
    watcher?.close();
    for (const folderWatcher of secretFolders.values()) folderWatcher.close();
  };
}
