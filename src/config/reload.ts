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
import { dirname } from 'node:path';
import type { Logger } from '../log.js';
import { type DebounceTimes, debounce } from '../loops/debounce.js';
import type { TimerClock } from '../util/clock.js';
import { loadConfigFile } from './load.js';
import type { ResolvedConfig } from './resolved.js';
import { SecretFolders } from './secret-folders.js';

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
  let stopped = false;
  const reloadOnce = serialised(
    () => reload(path, apply, log, secrets),
    () => stopped,
  );
  const schedule = debounce(reloadOnce, options.times ?? RELOAD_TIMES, options.clock);
  const secrets = new SecretFolders(path, schedule, log);
  const watcher = watchConfigFolder(
    dirname(path),
    (file) => file === null || secrets.concerns(file),
    schedule,
    log,
  );
  // The secret files of the config as it was started with.
  try {
    const initial = loadConfigFile(path);
    if (initial.ok) secrets.follow(initial.secretFiles);
  } catch {
    // The config was read a moment ago to start; if it is gone now, the next edit tells.
  }
  return () => {
    stopped = true;
    schedule.cancel();
    watcher?.close();
    secrets.close();
  };
}

/** Reads the config again and applies it; an invalid or refused one changes nothing. */
async function reload(
  path: string,
  apply: (config: ResolvedConfig, warnings: string[]) => Promise<void>,
  log: Logger,
  secrets: SecretFolders,
): Promise<void> {
  let loaded: ReturnType<typeof loadConfigFile>;
  try {
    loaded = loadConfigFile(path);
  } catch (error) {
    log.error({ error: (error as Error).message }, 'config reload failed; keeping the current configuration');
    return;
  }
  if (!loaded.ok) {
    log.error({ problems: loaded.problems }, 'config reload rejected; keeping the current configuration');
    return;
  }
  secrets.follow(loaded.secretFiles);
  try {
    await apply(loaded.config, loaded.warnings);
  } catch (error) {
    log.error(
      { error: (error as Error).message },
      'config reload rejected; keeping the current configuration',
    );
  }
}

/** The folder is watched rather than the file, because editors save by replacing the file. */
function watchConfigFolder(
  folder: string,
  concerns: (file: string | null) => boolean,
  onChange: () => void,
  log: Logger,
): FSWatcher | undefined {
  try {
    const watcher = watch(folder, (_event, file) => {
      if (concerns(file)) onChange();
    });
    watcher.unref();
    return watcher;
  } catch (error) {
    log.warn({ error: (error as Error).message }, 'cannot watch the config file; edits need a restart');
    return undefined;
  }
}

/** `task`, never twice at once: a call while it runs makes one more run after it. */
function serialised(task: () => Promise<void>, stopped: () => boolean): () => void {
  let running: Promise<void> | undefined;
  let again = false;
  const run = (): void => {
    if (stopped()) return;
    if (running) {
      again = true;
      return;
    }
    running = task().finally(() => {
      running = undefined;
      if (again) {
        again = false;
        run();
      }
    });
  };
  return run;
}
