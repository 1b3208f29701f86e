/**
 * `agentgate usage`'s registration (docs/usage.md, "The command line"), one line in
 * operator-commands.ts: its options here, its action (commands/usage.ts) loaded only when it
 * runs, as every operator command's is.
 */
import { type Command, Option } from 'commander';
import type { CliIo } from './io.js';

export const USAGE_GROUPINGS = ['hook', 'token', 'agent', 'model'] as const;

export function registerUsageCommand(program: Command, io: CliIo): void {
  program
    .command('usage')
    .description('tokens and cost of the runs that finished lately, per hook, token, agent or model')
    .option('-c, --config <file>', 'config file (else $AGENTGATE_CONFIG, $AGENTGATE_HOME, ~/.agentgate)')
    .option(
      '--url <url>',
      'the gateway address, instead of gateway.bind/gateway.port (e.g. when run with --port)',
    )
    .addOption(
      new Option('--by <what>', 'group the runs by hook, token, agent or model (default hook)').choices(
        USAGE_GROUPINGS,
      ),
    )
    .option('--since <when>', 'runs that finished since (24h, 30m, 7d, or ISO 8601; default 24h)')
    .option('--until <when>', 'and before (a duration back from now, or ISO 8601; default now)')
    .option('--json', "print the API's answer as JSON")
    .action(async (options) => (await import('./commands/usage.js')).usageCommand(io, options));
}

/** `agentgate budgets` (docs/budgets.md): each budget's spend in its current window. */
export function registerBudgetsCommand(program: Command, io: CliIo): void {
  program
    .command('budgets')
    .description('each budget in its current UTC hour or day: spend against limit, when it resets')
    .option('-c, --config <file>', 'config file (else $AGENTGATE_CONFIG, $AGENTGATE_HOME, ~/.agentgate)')
    .option(
      '--url <url>',
      'the gateway address, instead of gateway.bind/gateway.port (e.g. when run with --port)',
    )
    .option('--json', "print the API's answer as JSON")
    .action(async (options) => (await import('./commands/budgets.js')).budgetsCommand(io, options));
}
