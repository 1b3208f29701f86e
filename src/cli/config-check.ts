/** `agentgate config check` (docs/cli.md): every problem on stderr and exit 1, else `<file>: ok`. */
import { ConfigFileMissing, type LoadResult, loadConfigFile } from '../config/load.js';
import { locateConfigFile } from '../config/paths.js';
import { CliError } from './cli-error.js';
import type { CliIo } from './io.js';

export function configCheckCommand(io: CliIo, options: { config?: string }): void {
  const path = locateConfigFile(options.config, io.env);
  let result: LoadResult;
  try {
    result = loadConfigFile(path, io.env);
  } catch (error) {
    if (!(error instanceof ConfigFileMissing)) throw error;
    io.console.error(error.message);
    throw new CliError('', 1);
  }
  if (!result.ok) {
    for (const problem of result.problems) io.console.error(problem);
    io.console.error(`${path}: ${result.problems.length} problem(s)`);
    throw new CliError('', 1);
  }
  for (const warning of result.warnings) io.console.error(`warning: ${warning}`);
  io.console.log(`${path}: ok`);
}
