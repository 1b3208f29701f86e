#!/usr/bin/env node
/**
 * The `agentgate` bin (docs/cli.md): the program of program.ts on the real
 * process — its arguments, streams and environment, and its exit code.
 */
import { processIo } from './io.js';
import { runCli } from './program.js';

const code = await runCli(process.argv.slice(2), processIo());
// Left unset on success, as before: `run` and `hooks gmail run` return while they serve, and the
// process ends on a signal (processIo's `serve`).
if (code !== 0) process.exitCode = code;
