/**
 * The stdio transport of MCP (docs/tools.md, "Servers"): the server is a child process
 * speaking newline-delimited JSON-RPC on its stdin and stdout, framed by the SDK's own
 * `ReadBuffer` and `serializeMessage`.
 *
 * Why not the SDK's `StdioClientTransport`: it always adds the gateway's HOME, LOGNAME,
 * PATH, SHELL, TERM and USER to the environment it is given. A server here gets exactly
 * the environment its config gives (plus a minimal PATH when that sets none), as the
 * transforms' workers get none of the gateway's (src/mappings/transform-slot.ts).
 */
import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { ReadBuffer, serializeMessage } from '@modelcontextprotocol/sdk/shared/stdio.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';

/** After stdin is closed, a server has this long to exit before SIGTERM, then as long again before SIGKILL. */
const STOP_GRACE_MS = 2_000;

export interface StdioSpec {
  /** The program and its arguments; never run through a shell. */
  command: readonly string[];
  /** The child's whole environment. */
  env: Record<string, string>;
  cwd: string;
}

export class ExactEnvStdioTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: <T extends JSONRPCMessage>(message: T) => void;
  /** How the process ended (`exited with code 1`, `cannot run /opt/x: ENOENT`), once it has. */
  ended: string | undefined;
  private child: ChildProcessWithoutNullStreams | undefined;
  private readonly buffer = new ReadBuffer();
  private closed = false;

  constructor(
    private readonly spec: StdioSpec,
    private readonly onStderr: (chunk: Buffer) => void,
  ) {}

  start(): Promise<void> {
    if (this.child) throw new Error('the server process is already started');
    const [program, ...args] = this.spec.command;
    return new Promise((resolve, reject) => {
      const child = spawn(program as string, args, {
        env: this.spec.env,
        cwd: this.spec.cwd,
        stdio: ['pipe', 'pipe', 'pipe'],
        shell: false,
      });
      this.child = child;
      child.once('spawn', () => resolve());
      child.once('error', (error: NodeJS.ErrnoException) => {
        this.ended ??= `cannot run ${program}: ${error.code ?? error.message}`;
        reject(new Error(this.ended));
        this.onerror?.(error);
        this.finish();
      });
      child.once('close', (code, signal) => {
        this.ended ??= code !== null ? `exited with code ${code}` : `killed by ${signal}`;
        this.finish();
      });
      child.stdout.on('data', (chunk: Buffer) => this.read(chunk));
      child.stderr.on('data', this.onStderr);
      // A write to a process that has just died; its close follows.
      child.stdin.on('error', (error) => this.onerror?.(error));
    });
  }

  send(message: JSONRPCMessage): Promise<void> {
    const stdin = this.child?.stdin;
    if (!stdin || stdin.destroyed)
      return Promise.reject(new Error(`not connected: ${this.ended ?? 'stopped'}`));
    return new Promise((resolve) => {
      if (stdin.write(serializeMessage(message))) resolve();
      else stdin.once('drain', resolve);
    });
  }

  /** Closes stdin (how a stdio server is told to stop), then SIGTERM, then SIGKILL. */
  async close(): Promise<void> {
    const child = this.child;
    if (!child) return this.finish();
    this.ended ??= 'stopped by the gateway';
    const exited = new Promise<void>((resolve) => child.once('close', () => resolve()));
    child.stdin.end();
    for (const signal of ['SIGTERM', 'SIGKILL'] as const) {
      if (await settlesWithin(exited, STOP_GRACE_MS)) break;
      child.kill(signal);
    }
    this.finish();
  }

  private read(chunk: Buffer): void {
    try {
      this.buffer.append(chunk);
    } catch (error) {
      this.onerror?.(error as Error);
      void this.close();
      return;
    }
    for (;;) {
      let message: JSONRPCMessage | null;
      try {
        message = this.buffer.readMessage();
      } catch (error) {
        // A line that is not JSON-RPC (a server printing to stdout): reported, then skipped.
        this.onerror?.(error as Error);
        continue;
      }
      if (message === null) return;
      this.onmessage?.(message);
    }
  }

  /** Once: the transport is closed, whichever of exit, spawn failure or close came first. */
  private finish(): void {
    if (this.closed) return;
    this.closed = true;
    this.child = undefined;
    this.buffer.clear();
    this.onclose?.();
  }
}

function settlesWithin(promise: Promise<void>, ms: number): Promise<boolean> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(false), ms);
    timer.unref();
    void promise.then(() => {
      clearTimeout(timer);
      resolve(true);
    });
  });
}
