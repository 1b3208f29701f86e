/**
 * `agentgate run` (docs/cli.md): finds the config (writing a starter one when
 * there is none), refuses an invalid one or a gateway that cannot start, then
 * serves until SIGTERM/SIGINT.
 *
 * A refusal is a CliError, which `runCli` (program.ts) prints and returns as
 * the exit code like any command's, so it runs in any process with the `io`
 * given. Once listening, it hands `io.serve` its stop: the bin's stops it on
 * SIGTERM/SIGINT and exits; a test's stops it when the test is done.
 */
import { existsSync } from 'node:fs';
import { loadConfigFile } from '../config/load.js';
import { locateConfigFile } from '../config/paths.js';
import { writeStarterConfig } from '../config/starter.js';
import { createLogger, type Logger } from '../log.js';
import { type RunningGateway, startGateway } from '../server/gateway.js';
import { CliError } from './cli-error.js';
import { type CliIo, logDestination } from './io.js';

export interface RunOptions {
  config?: string;
  port?: number;
  bind?: string;
}

/** How long SIGTERM waits for in-flight requests before exiting anyway. */
const STOP_DEADLINE_MS = 10_000;

export async function runCommand(io: CliIo, options: RunOptions): Promise<void> {
  const path = locateConfigFile(options.config, io.env);
  if (!existsSync(path)) {
    writeStarterConfig(path, io.env);
    io.console.log(
      `agentgate: no config found; wrote a starter config to ${path} (mode 0600, random tokens inside)`,
    );
  }
  const loaded = loadConfigFile(path, io.env);
  if (!loaded.ok) {
    for (const problem of loaded.problems) io.console.error(problem);
    throw new CliError(`refusing to start: ${path} has ${loaded.problems.length} problem(s)`);
  }
  const log = createLogger(io.env.AGENTGATE_LOG_LEVEL ?? 'info', logDestination(io));
  for (const warning of loaded.warnings) log.warn(`config: ${warning}`);

  let gateway: RunningGateway;
  try {
    gateway = await startGateway(loaded.config, log, { port: options.port, bind: options.bind });
  } catch (error) {
    // A part that fails to start stops those started before it (services.ts): nothing is left
    // listening or holding the store, so the process ends on its own with this exit code.
    throw new CliError(`cannot start: ${(error as Error).message}`);
  }

  io.serve((signal) => stopGateway(gateway, log, signal));
  // Only now: a supervisor may send SIGTERM as soon as it reads this line.
  io.console.log(`agentgate listening on ${gateway.url}`);

  // `run` starts the Gmail receiver itself when hooks.gmail.account is set. It listens on
  // hooks.gmail.serve and hands mail to this gateway's ingress in process (hookUrl is for
  // `hooks gmail run` alone; docs/gmail.md, step 4).
  if (loaded.config.hooks.gmail?.account) {
    try {
      // Loaded only here: the receiver brings Google's auth library, which a gateway without
      // Gmail should not spend its start-up loading.
      const { createGmailReceiver } = await import('../gmail/start.js');
      const receiver = createGmailReceiver(loaded.config, log, { gatewayApp: gateway.app });
      let url = '';
      // Optional: if it cannot start, the gateway goes on without it.
      await gateway.services.start(
        {
          name: 'gmail push receiver',
          start: async () => {
            url = await receiver.start();
          },
          stop: () => receiver.stop(),
        },
        { optional: true },
      );
      io.console.log(`agentgate gmail receiver listening on ${url}`);
    } catch (error) {
      log.error({ error: (error as Error).message }, 'gmail receiver not started; hooks keep being served');
    }
  }
}

/**
 * SIGTERM/SIGINT (docs/cli.md): no new requests, in-flight work finished, the store closed;
 * exit 0 — also when the deadline passes first, the work left resuming on the next start —
 * or 1 when stopping failed.
 */
function stopGateway(gateway: RunningGateway, log: Logger, signal: string): Promise<number> {
  log.info({ signal }, 'stopping: no new requests; finishing in-flight work');
  let deadline: NodeJS.Timeout | undefined;
  const late = new Promise<number>((resolve) => {
    deadline = setTimeout(() => {
      log.warn('stop deadline passed; exiting with work left to resume on restart');
      resolve(0);
    }, STOP_DEADLINE_MS);
    deadline.unref();
  });
  const stopped = gateway.stop().then(
    () => 0,
    (error) => {
      log.error({ err: error }, 'error while stopping');
      return 1;
    },
  );
  return Promise.race([stopped, late]).finally(() => clearTimeout(deadline));
}
