import { ConfigFileMissing, loadConfigFile } from '../config/load.js';
import { locateConfigFile } from '../config/paths.js';

export function configCheckCommand(options: { config?: string }): void {
  const path = locateConfigFile(options.config, process.env);
  try {
    const result = loadConfigFile(path);
    if (!result.ok) {
      for (const problem of result.problems) console.error(problem);
      console.error(`${path}: ${result.problems.length} problem(s)`);
      process.exitCode = 1;
      return;
    }
    for (const warning of result.warnings) console.error(`warning: ${warning}`);
    console.log(`${path}: ok`);
  } catch (error) {
    if (!(error instanceof ConfigFileMissing)) throw error;
    console.error(error.message);
    process.exitCode = 1;
  }
}
