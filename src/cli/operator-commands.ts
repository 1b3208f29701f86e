/**
 * The operator's commands (docs/operating.md, "Command line"): they talk to a
 * running gateway over HTTP, with the address and tokens of the config `run`
 * resolves, or check the installation (`doctor`).
 */
import { type Command, InvalidArgumentError, Option } from 'commander';
import { DEFAULT_MAX_WAIT_S, DEFAULT_PROBE_TIMEOUT_S, RUN_STATUSES, WAKE_MODES } from './defaults.js';
import type { CliIo } from './io.js';
import { registerBudgetsCommand, registerUsageCommand } from './usage-command.js';

// Each command's module is loaded only when that command runs: `agentgate status` need not load
// the store drivers doctor uses, and none of them the gateway itself.
/** An action whose module is imported when it runs; it gets `io`, then commander's arguments. */
function lazy<A extends unknown[]>(io: CliIo, load: () => Promise<(io: CliIo, ...args: A) => Promise<void>>) {
  return async (...args: A) => (await load())(io, ...args);
}

const CONFIG_HELP = 'config file (else $AGENTGATE_CONFIG, $AGENTGATE_HOME, ~/.agentgate)';
const URL_HELP = 'the gateway address, instead of gateway.bind/gateway.port (e.g. when run with --port)';

const positiveInt = (max: number) => (value: string) => {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1 || n > max)
    throw new InvalidArgumentError(`must be an integer from 1 to ${max}`);
  return n;
};
const seconds = (value: string) => {
  const n = Number(value);
  if (!Number.isFinite(n) || n <= 0) throw new InvalidArgumentError('must be a number of seconds');
  return n;
};

/** `--config` and `--url`, on every command that talks to the gateway. */
function client(command: Command): Command {
  return command.option('-c, --config <file>', CONFIG_HELP).option('--url <url>', URL_HELP);
}

export function registerOperatorCommands(program: Command, io: CliIo): void {
  client(program.command('status'))
    .description('is the gateway up and ready, and how many runs and deliveries wait (exit 1 when not)')
    .option('--json', 'print JSON')
    .action(lazy(io, async () => (await import('./commands/status.js')).statusCommand));
  registerRunsCommands(program, io);
  registerUsageCommand(program, io);
  registerBudgetsCommand(program, io);
  registerSendCommands(program, io);
  registerDoctorCommand(program, io);
}

/** `runs list|show|retry|redeliver|steps|approve|deny`. */
function registerRunsCommands(program: Command, io: CliIo): void {
  const runs = program
    .command('runs')
    .description(
      'list, inspect, retry and redeliver agent runs; approve or deny the tool calls they wait for',
    );
  client(runs.command('list'))
    .description('recent runs, newest first')
    .addOption(new Option('--status <status>', 'only runs with this status').choices(RUN_STATUSES))
    .option('--source <source>', 'only runs from this source (hook:agent, hook:<mapping id>, …)')
    .option('--token <id>', 'only runs accepted with the hook token of this id ("default" for hooks.token)')
    .option('--limit <n>', 'at most this many runs (default 50)', positiveInt(1000))
    .option('--before <runId>', 'the page after this run (as printed under "more:")')
    .option('--json', "print the API's answer as JSON")
    .action(lazy(io, async () => (await import('./commands/runs.js')).runsListCommand));
  client(runs.command('show'))
    .description('one run: status, times, delivery, error and reply')
    .argument('<runId>')
    .option('--json', "print the API's answer as JSON")
    .action(lazy(io, async () => (await import('./commands/runs.js')).runsShowCommand));
  client(runs.command('retry'))
    .description(
      'run a finished run again with the same inputs (a new run); with --failed/--timed-out and no run id, every such run not retried yet',
    )
    .argument('[runId]')
    .option('--failed', 'retry the failed runs (no run id)')
    .option('--timed-out', 'retry the timed-out runs (no run id)')
    .option('--source <source>', 'with --failed/--timed-out: only runs from this source')
    .option(
      '--since <when>',
      'with --failed/--timed-out: only runs that finished since (1h, 30m, 2d, or ISO 8601)',
    )
    .option(
      '--until <when>',
      'with --failed/--timed-out: only runs that finished before (1h, 30m, 2d, or ISO 8601)',
    )
    .option(
      '--limit <n>',
      'with --failed/--timed-out: at most this many runs per status (default 100)',
      positiveInt(1000),
    )
    .option('--dry-run', 'with --failed/--timed-out: only count the runs that would be retried')
    .option('--json', "print the API's answer as JSON")
    .action(lazy(io, async () => (await import('./commands/runs.js')).runsRetryCommand));
  client(runs.command('redeliver'))
    .description("deliver a run's reply again, on the same route")
    .argument('<runId>')
    .option('--json', "print the API's answer as JSON")
    .action(lazy(io, async () => (await import('./commands/runs.js')).runsRedeliverCommand));
  client(runs.command('steps'))
    .description("a run's steps: its model and tool calls, in order, and the call it waits for")
    .argument('<runId>')
    .option('--json', "print the API's answer as JSON")
    .action(lazy(io, async () => (await import('./commands/run-steps.js')).runsStepsCommand));
  client(runs.command('approve'))
    .description('approve the tool call a waiting run waits for: the run goes on and makes it')
    .argument('<runId>')
    .option('--json', "print the API's answer as JSON")
    .action(lazy(io, async () => (await import('./commands/run-steps.js')).runsApproveCommand));
  client(runs.command('deny'))
    .description('deny the tool call a waiting run waits for: the run goes on, the model told it was denied')
    .argument('<runId>')
    .option('--json', "print the API's answer as JSON")
    .action(lazy(io, async () => (await import('./commands/run-steps.js')).runsDenyCommand));
}

/** `send wake|agent`: a test hook through the running gateway. */
function registerSendCommands(program: Command, io: CliIo): void {
  const send = program
    .command('send')
    .description('send a test hook through the running gateway (prints the JSON answer)');
  client(send.command('wake'))
    .description('POST {hooks.path}/wake: a system event for the main session')
    .argument('<text>')
    .addOption(new Option('--mode <mode>', 'when the heartbeat sees it').choices(WAKE_MODES))
    .action(lazy(io, async () => (await import('./commands/send.js')).sendWakeCommand));
  client(send.command('agent'))
    .description('POST {hooks.path}/agent: an isolated agent run')
    .argument('<message>')
    .option('--name <name>', 'name shown in the summary posted to the main session')
    .option('--agent <id>', 'the agent to run (hooks.allowedAgentIds)')
    .option('--session-key <key>', 'session key (needs hooks.allowRequestSessionKey)')
    .addOption(new Option('--wake-mode <mode>', 'heartbeat after the run').choices(WAKE_MODES))
    .option('--channel <channel>', 'deliver the reply on this channel (or "last")')
    .option('--to <recipient>', 'deliver the reply to this recipient')
    .option('--model <model>', 'model override ("<provider>/<model>" or an alias)')
    .option('--thinking <level>', 'thinking level')
    .option('--timeout <seconds>', 'run timeout', seconds)
    .option('--idempotency-key <key>', 'sent as Idempotency-Key: a repeat returns the first answer')
    .option('--wait', 'wait until the run finishes and print its reply (exit 1 unless it succeeded)')
    .option(
      '--max-wait <seconds>',
      `with --wait: give up after this long (default ${DEFAULT_MAX_WAIT_S})`,
      seconds,
    )
    .action(lazy(io, async () => (await import('./commands/send.js')).sendAgentCommand));
}

function registerDoctorCommand(program: Command, io: CliIo): void {
  program
    .command('doctor')
    .description(
      'check config, tokens, file modes, the store, and every provider and channel (exit 1 on a fail)',
    )
    .option('-c, --config <file>', CONFIG_HELP)
    .option('--json', 'print JSON')
    .option(
      '--timeout <seconds>',
      `time limit of each service check (default ${DEFAULT_PROBE_TIMEOUT_S})`,
      seconds,
    )
    .action(lazy(io, async () => (await import('./commands/doctor.js')).doctorCommand));
}
