/**
 * `agentgate hooks gmail run`: the Gmail push receiver on its own (docs/gmail.md).
 *
 * As `run` (run.ts): a refusal to start is a CliError, returned by `runCli` as
 * the exit code; once listening, the receiver's stop goes to `io.serve` (the
 * bin's: SIGTERM/SIGINT stops it and exits 0).
 */
import { loadConfigFile } from '../config/load.js';
import { locateConfigFile } from '../config/paths.js';
import { createGmailReceiver, GmailConfigError } from '../gmail/start.js';
import { createLogger } from '../log.js';
import { CliError } from './cli-error.js';
import { type CliIo, logDestination } from './io.js';

export async function gmailRunCommand(io: CliIo, options: { config?: string }): Promise<void> {
  const path = locateConfigFile(options.config, io.env);
  const loaded = loadConfigFile(path, io.env);
  if (!loaded.ok) {
    for (const problem of loaded.problems) io.console.error(problem);
    throw new CliError('', 1);
  }
  const log = createLogger(io.env.AGENTGATE_LOG_LEVEL ?? 'info', logDestination(io));
  let receiver: ReturnType<typeof createGmailReceiver>;
  try {
    receiver = createGmailReceiver(loaded.config, log);
  } catch (error) {
    if (!(error instanceof GmailConfigError)) throw error;
    io.console.error(error.message);
    throw new CliError('', 1);
  }
  let url: string;
  try {
    url = await receiver.start();
  } catch (error) {
    throw new CliError(`cannot start the gmail receiver: ${(error as Error).message}`);
  }
  io.serve(() => receiver.stop().then(() => 0));
  io.console.log(`agentgate gmail receiver listening on ${url}`);
}
