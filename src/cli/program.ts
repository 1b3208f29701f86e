#!/usr/bin/env node
/**
 * The `agentgate` command line (docs/cli.md).
 */
import { Command, InvalidArgumentError } from 'commander';
import { registerOperatorCommands } from './operator-commands.js';

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
  // Each command's module loads when it runs, so `agentgate status` does not load the gateway.
  .action(async (options) => (await import('./run.js')).runCommand(options));

const config = program.command('config').description('inspect the configuration');
config
  .command('check')
  .description('validate the config file; exit 0 when valid, 1 with every problem otherwise')
  .option('-c, --config <file>', 'config file (else $AGENTGATE_CONFIG, $AGENTGATE_HOME, ~/.agentgate)')
  .action(async (options) => (await import('./config-check.js')).configCheckCommand(options));

const gmail = program
  .command('hooks')
  .description('hook presets')
  .command('gmail')
  .description('the gmail preset: new mail in a Gmail inbox becomes an agent run');
gmail
  .command('setup')
  .description('write hooks.gmail, get read-only Gmail consent, and (with --apply) create the Google side')
  .option('-c, --config <file>', 'config file (else $AGENTGATE_CONFIG, $AGENTGATE_HOME, ~/.agentgate)')
  .option('--account <email>', 'the Gmail address to watch')
  .option('--project <id>', 'the Google Cloud project for the Pub/Sub topic')
  .option('--push-url <url>', 'public URL of the receiver (the push token is appended as ?token=)')
  .option('--label <label>', 'the label to watch', 'INBOX')
  .option('--client-secret <file>', "Google's OAuth client JSON, for the consent flow in a browser")
  .option(
    '--credentials <file>',
    'an existing {client_id, client_secret, refresh_token} JSON (no browser needed)',
  )
  .option(
    '--apply',
    'enable the APIs, create the topic, grant Gmail publish rights, create the push subscription, call watch',
  )
  .option('--show-secrets', 'print the push URL with its token')
  .action(async (options) => (await import('./gmail-setup.js')).gmailSetupCommand(options));
gmail
  .command('run')
  .description('run the Pub/Sub push receiver that forwards new mail to /hooks/gmail')
  .option('-c, --config <file>', 'config file (else $AGENTGATE_CONFIG, $AGENTGATE_HOME, ~/.agentgate)')
  .action(async (options) => (await import('./gmail-run.js')).gmailRunCommand(options));

registerOperatorCommands(program);

await program.parseAsync();
