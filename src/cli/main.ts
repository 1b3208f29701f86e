#!/usr/bin/env node
/**
 * The `agentgate` command line (CONTRACT §2).
 */
import { Command, InvalidArgumentError } from 'commander';
import { configCheckCommand } from './config-check.js';
import { runCommand } from './run.js';

const program = new Command()
  .name('agentgate')
  .description('Self-hosted gateway that lets external systems wake and drive AI agents over HTTP webhooks')
  .version('0.1.0')
  .showHelpAfterError();

const port = (value: string) => {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0 || n > 65535) throw new InvalidArgumentError('must be a port number');
  return n;
};

program
  .command('run')
  .description('run the gateway in the foreground (writes a starter config when none exists)')
  .option('-c, --config <file>', 'config file (else $AGENTGATE_CONFIG, $AGENTGATE_HOME, ~/.agentgate)')
  .option('-p, --port <n>', 'listen on this port instead of gateway.port', port)
  .option('-b, --bind <addr>', 'listen on this address instead of gateway.bind')
  .action(runCommand);

const config = program.command('config').description('inspect the configuration');
config
  .command('check')
  .description('validate the config file; exit 0 when valid, 1 with every problem otherwise')
  .option('-c, --config <file>', 'config file (else $AGENTGATE_CONFIG, $AGENTGATE_HOME, ~/.agentgate)')
  .action(configCheckCommand);

await program.parseAsync();
