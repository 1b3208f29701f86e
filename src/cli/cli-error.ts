/**
 * How the operator commands end: a CliError carries the sentence for stderr and
 * the exit code; `action` turns it into both, so each command just throws.
 */

export class CliError extends Error {
  constructor(
    message: string,
    readonly exitCode = 1,
  ) {
    super(message);
    this.name = 'CliError';
  }
}

/**
 * Wraps a command's action for commander: a CliError is printed as
 * `agentgate: <message>` on stderr and sets the exit code; anything else is a
 * bug and keeps its stack trace.
 */
export function action<A extends unknown[]>(
  run: (...args: A) => Promise<void>,
): (...args: A) => Promise<void> {
  return async (...args: A) => {
    try {
      await run(...args);
    } catch (error) {
      if (!(error instanceof CliError)) throw error;
      if (error.message) console.error(`agentgate: ${error.message}`);
      process.exitCode = error.exitCode;
    }
  };
}
