/**
 * The running gateway's config reload (docs/configuration.md, "Reload"): a
 * changed config file's `hooks`, `alerts` and `tools` sections apply at once;
 * every other section takes effect on the next start.
 */
import { watchConfigFile } from '../config/reload.js';
import type { ResolvedConfig } from '../config/resolved.js';
import type { HookIngress } from '../ingress/hooks-routes.js';
import type { Logger } from '../log.js';
import type { Service } from './services.js';

/** The alerts section in force: read at each failure, so a reload applies to the next one (docs/alerts.md). */
export interface AlertsSection {
  current: ResolvedConfig['alerts'];
}

/** What a reload hands the tool servers (tools/source.ts): changed servers start again on next use. */
export interface ToolServers {
  reload(next: ResolvedConfig): void;
}

export function configWatcher(
  config: ResolvedConfig,
  ingress: HookIngress,
  alerts: AlertsSection,
  tools: ToolServers,
  log: Logger,
): Service {
  let stopWatching = () => {};
  return {
    name: 'config watcher',
    start: () => {
      stopWatching = watchConfigFile(
        config.configPath,
        async (next, warnings) => {
          await reloadHooks(config, next, warnings, ingress, log);
          tools.reload(next);
          if (JSON.stringify(next.alerts) !== JSON.stringify(alerts.current)) {
            alerts.current = next.alerts;
            log.info({ alerts: alerts.current ? 'on' : 'off' }, 'config reloaded: alerts section applied');
          }
        },
        log,
      );
    },
    stop: () => stopWatching(),
  };
}

/**
 * Applies a changed config file's `hooks` section (token, mappings, presets,
 * policies) to the running ingress. Everything else — and `hooks.path` or
 * `hooks.enabled` — takes effect on the next start.
 */
async function reloadHooks(
  current: ResolvedConfig,
  next: ResolvedConfig,
  warnings: string[],
  ingress: HookIngress,
  log: Logger,
): Promise<void> {
  const { path, enabled } = current.hooks;
  if (next.hooks.path !== path || next.hooks.enabled !== enabled) {
    log.warn('config reload: hooks.path and hooks.enabled take effect on restart');
  }
  const restartOnly = (['gateway', 'store', 'models', 'agents', 'channels', 'budgets'] as const).filter(
    (key) => JSON.stringify(next[key]) !== JSON.stringify(current[key]),
  );
  if (restartOnly.length > 0)
    log.warn({ sections: restartOnly }, 'config reload: these sections take effect on restart');
  // The `tools` section rides along: the approval timeout and the mappings' `tools` are read from it.
  await ingress.reload({ ...current, hooks: { ...next.hooks, path, enabled }, tools: next.tools }, log);
  for (const warning of warnings) log.warn(`config: ${warning}`);
  log.info('config reloaded: hooks section applied');
}
