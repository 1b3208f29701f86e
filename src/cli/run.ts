import { existsSync } from 'node:fs';
import { loadConfigFile } from '../config/load.js';
import { locateConfigFile } from '../config/paths.js';
import { writeStarterConfig } from '../config/starter.js';
import { createLogger } from '../log.js';
import { startGateway } from '../server/gateway.js';

export interface RunOptions {
  config?: string;
  port?: number;
  bind?: string;
}

/** How long SIGTERM waits for in-flight requests before exiting anyway. */
const STOP_DEADLINE_MS = 10_000;

export async function runCommand(options: RunOptions): Promise<void> {
  const path = locateConfigFile(options.config, process.env);
  if (!existsSync(path)) {
    writeStarterConfig(path);
    console.log(
      `agentgate: no config found; wrote a starter config to ${path} (mode 0600, random tokens inside)`,
    );
  }
  const loaded = loadConfigFile(path);
  if (!loaded.ok) {
    for (const problem of loaded.problems) console.error(problem);
    console.error(`agentgate: refusing to start: ${path} has ${loaded.problems.length} problem(s)`);
    process.exit(1);
  }
  const log = createLogger();
  for (const warning of loaded.warnings) log.warn(`config: ${warning}`);

  let gateway: Awaited<ReturnType<typeof startGateway>>;
  try {
    gateway = await startGateway(loaded.config, log, { port: options.port, bind: options.bind });
  } catch (error) {
    console.error(`agentgate: cannot start: ${(error as Error).message}`);
    process.exit(1);
  }

  const shutdown = (signal: string) => {
    log.info({ signal }, 'stopping: no new requests; finishing in-flight work');
    const deadline = setTimeout(() => {
      log.warn('stop deadline passed; exiting with work left to resume on restart');
      process.exit(0);
    }, STOP_DEADLINE_MS);
    deadline.unref();
    // The Gmail receiver, when running, is the last of the gateway's services: it stops first.
    gateway.stop().then(
      () => process.exit(0),
      (error) => {
        log.error({ err: error }, 'error while stopping');
        process.exit(1);
      },
    );
  };
  process.once('SIGTERM', () => shutdown('SIGTERM'));
  process.once('SIGINT', () => shutdown('SIGINT'));
  // Only now: a supervisor may send SIGTERM as soon as it reads this line.
  console.log(`agentgate listening on ${gateway.url}`);

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
      console.log(`agentgate gmail receiver listening on ${url}`);
    } catch (error) {
      log.error({ error: (error as Error).message }, 'gmail receiver not started; hooks keep being served');
    }
  }
}
