/**
 * How a command ends with an error: a CliError carries the sentence for stderr
 * and the exit code; `runCli` (program.ts) turns it into both, so each command
 * just throws.
 */

export class CliError extends Error {
  /** An empty message prints nothing: the command has said why already (e.g. doctor's `fail` lines). */
  constructor(
    message: string,
    readonly exitCode = 1,
  ) {
    super(message);
    this.name = 'CliError';
  }
}
