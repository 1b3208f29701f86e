/**
 * Watches the config file and re-reads it when it changes. An invalid edit is
 * reported (every problem, by key path) and changes nothing; a valid one is
 * handed to `apply`. The folder is watched rather than the file, because
 * editors save by replacing the file.
 */
import { type FSWatcher, watch } from 'node:fs';
import { basename, dirname } from 'node:path';
import type { Logger } from '../log.js';
import { loadConfigFile } from './load.js';
import type { ResolvedConfig } from './resolved.js';

const DEBOUNCE_MS = 200;

export function watchConfigFile(
  path: string,
  apply: (config: ResolvedConfig, warnings: string[]) => Promise<void>,
  log: Logger,
): () => void {
  let timer: NodeJS.Timeout | undefined;
  let watcher: FSWatcher | undefined;
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
    watcher = watch(dirname(path), (_event, file) => {
      if (file !== null && file !== basename(path)) return;
      clearTimeout(timer);
      timer = setTimeout(reload, DEBOUNCE_MS);
    });
    watcher.unref();
  } catch (error) {
    log.warn({ error: (error as Error).message }, 'cannot watch the config file; edits need a restart');
  }
  return () => {
    clearTimeout(timer);
    watcher?.close();
  };
}
