/**
 * `api: "command"` — runs a local CLI agent: argv from config (no shell, so nothing in
 * the prompt or config is ever shell-interpreted), the prompt on stdin, the reply on
 * stdout. Killed when the run is aborted; stderr is kept for the run's error.
 */

import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { abortReason } from '../kit/abort.js';
import {
  type ChatMessage,
  type CompletionRequest,
  type CompletionResult,
  isChatMessage,
  type ModelProvider,
  ProviderError,
} from '../kit/types.js';
import type { CommandConfig } from './config.js';

/** A reply larger than this is a runaway process, not an answer. */
export const MAX_STDOUT_BYTES = 1024 * 1024;
/** Enough stderr to show the actual failure, which CLIs print last. */
export const STDERR_TAIL_BYTES = 4096;
/** How long a process gets to exit after SIGTERM before SIGKILL. */
export const KILL_GRACE_MS = 2000;

/**
 * The prompt written to stdin: the system prompt (if any), then every turn, blocks
 * separated by one blank line, the new user turn last:
 *
 *     System:
 *     <system prompt>
 *
 *     User: <first message>
 *
 *     Assistant: <reply>
 *
 *     User: <new message>
 *
 * `System:` gets its own line because system prompts are long and multi-line; turns
 * keep the `Role: text` form most CLI agents already understand as a transcript.
 */
export function renderPrompt(system: string | undefined, messages: ChatMessage[]): string {
  const blocks: string[] = [];
  if (system) blocks.push(`System:\n${system}`);
  for (const { role, content } of messages) {
    blocks.push(`${role === 'user' ? 'User' : 'Assistant'}: ${content}`);
  }
  return `${blocks.join('\n\n')}\n`;
}

export function createCommandProvider(name: string, config: CommandConfig): ModelProvider {
  const [program, ...args] = config.command as [string, ...string[]];
  const label = `command "${program}"`;
  return {
    name,
    complete(request: CompletionRequest): Promise<CompletionResult> {
      const { signal } = request;
      if (signal.aborted) return Promise.reject(abortReason(signal));
      return new Promise<CompletionResult>((resolve, reject) => {
        const child = spawn(program, args, {
          cwd: config.cwd,
          env: { ...process.env, ...config.env },
          stdio: ['pipe', 'pipe', 'pipe'],
          // Own process group (POSIX), so a kill reaches whatever the CLI itself spawned.
          detached: process.platform !== 'win32',
          windowsHide: true,
        });
        superviseRun(child, { label, cwd: config.cwd, request, resolve, reject });
        child.stdin.end(renderPrompt(request.system, request.messages.filter(isChatMessage)));
      });
    },
  };
}

interface RunSettings {
  label: string;
  cwd: string | undefined;
  request: CompletionRequest;
  resolve(result: CompletionResult): void;
  reject(error: unknown): void;
}

/**
 * Watches one run of the CLI: its output within bounds, the caller's abort, and its end,
 * settling the turn once. A kill is SIGTERM, then SIGKILL after the grace period.
 */
function superviseRun(child: ChildProcessWithoutNullStreams, run: RunSettings): void {
  const { signal } = run.request;
  let settled = false;
  let exited = false;
  let killTimer: NodeJS.Timeout | undefined;
  const output = collectOutput(child, () => {
    kill();
    finish(new ProviderError(`${run.label} wrote more than ${MAX_STDOUT_BYTES} bytes to stdout`));
  });

  const finish = (error: unknown, result?: CompletionResult) => {
    if (settled) return;
    settled = true;
    signal.removeEventListener('abort', onAbort);
    if (error === undefined && result) run.resolve(result);
    else run.reject(error);
  };
  const kill = () => {
    if (exited || killTimer) return;
    sendSignal(child.pid, 'SIGTERM', () => child.kill('SIGTERM'));
    killTimer = setTimeout(
      () => sendSignal(child.pid, 'SIGKILL', () => child.kill('SIGKILL')),
      KILL_GRACE_MS,
    );
  };
  // The caller decides what an abort means (timed_out, shutdown): reject at once with its
  // reason and let the kill finish in the background rather than hold the run for the grace period.
  const onAbort = () => {
    kill();
    finish(abortReason(signal));
  };
  signal.addEventListener('abort', onAbort, { once: true });

  child.on('error', (error: NodeJS.ErrnoException) => {
    exited = true;
    clearTimeout(killTimer);
    finish(new ProviderError(spawnFailure(run.label, error, run.cwd)));
  });
  // 'close', not 'exit': stdout and stderr are fully read by then.
  child.on('close', (code, killedBy) => {
    exited = true;
    clearTimeout(killTimer);
    const outcome = closeOutcome(run.label, code, killedBy, output);
    if (outcome instanceof ProviderError) return finish(outcome);
    // A CLI's output is only known whole: a streamed run gets it as one piece.
    if (!settled) run.request.onDelta?.(outcome.text);
    finish(undefined, outcome);
  });
}

interface CollectedOutput {
  stdout(): string;
  stderrTail(): string;
}

/** Reads stdout whole (up to MAX_STDOUT_BYTES, else `overflow`) and keeps stderr's tail. */
function collectOutput(child: ChildProcessWithoutNullStreams, overflow: () => void): CollectedOutput {
  const stdout: Buffer[] = [];
  let stdoutBytes = 0;
  let stderrTail = Buffer.alloc(0);
  child.stdout.on('data', (chunk: Buffer) => {
    stdoutBytes += chunk.length;
    if (stdoutBytes > MAX_STDOUT_BYTES) return overflow();
    stdout.push(chunk);
  });
  child.stderr.on('data', (chunk: Buffer) => {
    stderrTail = Buffer.concat([stderrTail, chunk]);
    if (stderrTail.length > STDERR_TAIL_BYTES) stderrTail = stderrTail.subarray(-STDERR_TAIL_BYTES);
  });
  // A CLI that exits without reading its stdin makes the write fail with EPIPE; its exit code tells the story.
  child.stdin.on('error', () => {});
  return {
    stdout: () => Buffer.concat(stdout).toString('utf8').trim(),
    stderrTail: () => stderrTail.toString('utf8').trim(),
  };
}

/** The reply of a CLI that exited, or why there is none (its exit code, its stderr's tail). */
function closeOutcome(
  label: string,
  code: number | null,
  killedBy: NodeJS.Signals | null,
  output: CollectedOutput,
): CompletionResult | ProviderError {
  const stderr = output.stderrTail();
  const tail = stderr ? `: ${stderr}` : ' (no stderr output)';
  if (code !== 0) {
    const how = code === null ? `was killed by ${killedBy}` : `exited with code ${code}`;
    return new ProviderError(`${label} ${how}${tail}`);
  }
  const text = output.stdout();
  return text ? { text } : new ProviderError(`${label} returned no text${tail}`);
}

/** Signals the whole process group where there is one; falls back to the child alone. */
function sendSignal(pid: number | undefined, sig: NodeJS.Signals, fallback: () => void): void {
  if (pid !== undefined && process.platform !== 'win32') {
    try {
      process.kill(-pid, sig);
      return;
    } catch {
      // Group already gone, or never created: try the child itself.
    }
  }
  fallback();
}

function spawnFailure(label: string, error: NodeJS.ErrnoException, cwd: string | undefined): string {
  if (error.code === 'ENOENT') {
    // spawn reports a missing working directory as ENOENT too; name the right culprit.
    if (cwd && !existsSync(cwd))
      return `${label} could not be started: working directory "${cwd}" does not exist`;
    return `${label} could not be started: program not found (ENOENT)`;
  }
  if (error.code === 'EACCES') return `${label} could not be started: permission denied (EACCES)`;
  return `${label} could not be started: ${error.message}`;
}
