/**
 * The `agentgate` command line (docs/cli.md) as a program that runs in any
 * process: `runCli` parses the arguments, runs the command with the given
 * streams and environment (io.ts), and returns the exit code instead of
 * setting it. main.ts, the bin, runs it on the real process; tests run it in
 * their own.
 *
 * `run` and `hooks gmail run` are servers. A refusal to start (an invalid
 * config, a store in use) is returned as the exit code like any command's
 * error; once listening, they return with the server running and hand its
 * stop to `io.serve`: the bin's stops it on SIGTERM/SIGINT and exits, a test's
 * stops it when the test is done.
 */
import { Command, CommanderError, InvalidArgumentError } from 'commander';
import { CliError } from './cli-error.js';
import type { CliIo, CliStream } from './io.js';
import { registerOperatorCommands } from './operator-commands.js';

const CONFIG_HELP = 'config file (else $AGENTGATE_CONFIG, $AGENTGATE_HOME, ~/.agentgate)';

/** Runs one command line (the arguments after `agentgate`); resolves to its exit code. */
export async function runCli(argv: readonly string[], io: CliIo): Promise<number> {
  try {
    await buildProgram(io).parseAsync(argv, { from: 'user' });
    return 0;
  } catch (error) {
    // Help, --version and commander's own errors (an unknown option, a bad argument): already
    // printed to io by commander, which throws instead of exiting (`exitOverride`).
    if (error instanceof CommanderError) return error.exitCode;
    if (error instanceof CliError) {
      if (error.message) io.console.error(`agentgate: ${error.message}`);
      return error.exitCode;
    }
    // Anything else is a bug: it keeps its stack trace.
    throw error;
  }
}

export function buildProgram(io: CliIo): Command {
  const program = new Command()
    .name('agentgate')
    .description('Self-hosted gateway that lets external systems wake and drive AI agents over HTTP webhooks')
    .version('0.1.0')
    .showHelpAfterError()
    // Set before the commands are added, which inherit them.
    .configureOutput({
      writeOut: (text) => io.stdout.write(text),
      writeErr: (text) => io.stderr.write(text),
      getOutHelpWidth: () => helpWidth(io.stdout),
      getErrHelpWidth: () => helpWidth(io.stderr),
    })
    .exitOverride();

  const port = (value: string) => {
    const n = Number(value);
    if (!Number.isInteger(n) || n < 0 || n > 65535) throw new InvalidArgumentError('must be a port number');
    return n;
  };

  program
    .command('run')
    .description('run the gateway in the foreground (writes a starter config when none exists)')
    .option('-c, --config <file>', CONFIG_HELP)
    .option('-p, --port <n>', 'listen on this port instead of gateway.port', port)
    .option('-b, --bind <addr>', 'listen on this address instead of gateway.bind')
    // Each command's module loads when it runs, so `agentgate status` does not load the gateway.
    .action(async (options) => (await import('./run.js')).runCommand(io, options));

  const config = program.command('config').description('inspect the configuration');
  config
    .command('check')
    .description('validate the config file; exit 0 when valid, 1 with every problem otherwise')
    .option('-c, --config <file>', CONFIG_HELP)
    .action(async (options) => (await import('./config-check.js')).configCheckCommand(io, options));

  const gmail = program
    .command('hooks')
    .description('hook presets')
    .command('gmail')
    .description('the gmail preset: new mail in a Gmail inbox becomes an agent run');
  gmail
    .command('setup')
    .description('write hooks.gmail, get read-only Gmail consent, and (with --apply) create the Google side')
    .option('-c, --config <file>', CONFIG_HELP)
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
    .action(async (options) => (await import('./gmail-setup.js')).gmailSetupCommand(io, options));
  gmail
    .command('run')
    .description('run the Pub/Sub push receiver that forwards new mail to /hooks/gmail')
    .option('-c, --config <file>', CONFIG_HELP)
    .action(async (options) => (await import('./gmail-run.js')).gmailRunCommand(io, options));

  registerOperatorCommands(program, io);
  return program;
}

/** Commander's own choice, on io's streams: a terminal's width, else 80 columns. */
function helpWidth(stream: CliStream): number {
  return (stream.isTTY ? stream.columns : undefined) ?? 80;
}
