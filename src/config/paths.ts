import { homedir } from 'node:os';
import { isAbsolute, join, relative, resolve, sep } from 'node:path';

export const CONFIG_FILE_NAME = 'agentgate.json5';

/**
 * --config, else $AGENTGATE_CONFIG, else $AGENTGATE_HOME/agentgate.json5, else ~/.agentgate/
 * (docs/cli.md).
 */
export function locateConfigFile(explicit: string | undefined, env: NodeJS.ProcessEnv): string {
  if (explicit) return resolve(explicit);
  if (env.AGENTGATE_CONFIG) return resolve(env.AGENTGATE_CONFIG);
  if (env.AGENTGATE_HOME) return resolve(env.AGENTGATE_HOME, CONFIG_FILE_NAME);
  return join(homeDirectory(env), '.agentgate', CONFIG_FILE_NAME);
}

/**
 * `~`: what os.homedir() reads from the process ($HOME, %USERPROFILE% on Windows), read from `env`
 * instead, so that a command run in process with another environment (tests) looks where a child
 * process with that environment would.
 */
function homeDirectory(env: NodeJS.ProcessEnv): string {
  return (process.platform === 'win32' ? env.USERPROFILE : env.HOME) ?? homedir();
}

/** Expands `{config_dir}` and makes relative paths relative to the config directory. */
export function resolveConfigPath(value: string, configDir: string): string {
  const expanded = value.replaceAll('{config_dir}', configDir);
  return isAbsolute(expanded) ? resolve(expanded) : resolve(configDir, expanded);
}

/** True when `candidate` is `root` itself or lies below it (purely lexical). */
export function isInside(root: string, candidate: string): boolean {
  const rel = relative(root, candidate);
  return rel === '' || (!rel.startsWith(`..${sep}`) && rel !== '..' && !isAbsolute(rel));
}
