/**
 * `agentgate hooks gmail run`: the Gmail push receiver on its own (docs/gmail.md).
 */
import { loadConfigFile } from '../config/load.js';
import { locateConfigFile } from '../config/paths.js';
import { createGmailReceiver, GmailConfigError } from '../gmail/start.js';
import { createLogger } from '../log.js';

export async function gmailRunCommand(options: { config?: string }): Promise<void> {
  const path = locateConfigFile(options.config, process.env);
  const loaded = loadConfigFile(path);
  if (!loaded.ok) {
    for (const problem of loaded.problems) console.error(problem);
    process.exit(1);
  }
  const log = createLogger();
  let receiver: ReturnType<typeof createGmailReceiver>;
  try {
    receiver = createGmailReceiver(loaded.config, log);
  } catch (error) {
    if (!(error instanceof GmailConfigError)) throw error;
    console.error(error.message);
    process.exit(1);
  }
  let url: string;
  try {
    url = await receiver.start();
  } catch (error) {
    console.error(`agentgate: cannot start the gmail receiver: ${(error as Error).message}`);
    process.exit(1);
  }
  const stop = () => receiver.stop().then(() => process.exit(0));
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
  console.log(`agentgate gmail receiver listening on ${url}`);
}
