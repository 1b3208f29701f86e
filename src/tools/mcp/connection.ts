/**
 * One MCP server, as the gateway keeps it (docs/tools.md, "Servers"): started (stdio) or
 * connected (http) when first needed, then kept; its tool list cached, and listed again
 * when the server sends `notifications/tools/list_changed`. When it dies or its connection
 * fails it is started again on next use, not sooner than a backoff that doubles with each
 * failure in a row (`limits.ts`). A call is bounded by the call limit (60 s by default) —
 * the wait for a restart and the start included — and by the run's signal.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ErrorCode, McpError, ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import type { Logger } from '../../log.js';
import type { ToolServerConfig } from '../config.js';
import type { ToolOutcome } from '../types.js';
import { backoffDelay, type ServerLimits } from './limits.js';
import { type OpenedTransport, openTransport, secretsOf } from './open-transport.js';
import { describeFailure, isConnectionFailure, isSessionGone, outcomeOf } from './results.js';
import { redactor } from './stderr-log.js';

const CLIENT_INFO = { name: 'agentgate', version: '0.1.0' };
/** The tool names MCP recommends; `<server>.<tool>` selectors and providers' function names take these. */
const TOOL_NAME = /^[A-Za-z0-9_./-]{1,128}$/;
/** `tools/list` pages followed at most: a server that pages forever is cut there. */
const MAX_LIST_PAGES = 50;

/** A tool as its server lists it. */
export interface ServerTool {
  name: string;
  description: string;
  inputSchema: Record<string, unknown>;
}

export interface ConnectionContext {
  configDir: string;
  log: Logger;
  limits: ServerLimits;
  now?: () => number;
}

/** The server cannot be reached now: not started, dead within its backoff, or failing to start. */
export class ServerUnavailable extends Error {}

interface Live {
  client: Client;
  opened: OpenedTransport;
}

export class ServerConnection {
  private live: Live | undefined;
  private starting: Promise<Live> | undefined;
  /** The connection being started, so a stop can end it before it is up. */
  private pending: Live | undefined;
  private cached: ServerTool[] | undefined;
  private stale = false;
  private failures = 0;
  private retryAt = 0;
  private lastFailure: string | undefined;
  private inflight = 0;
  private retired = false;
  private readonly scrub: (text: string) => string;
  private readonly now: () => number;

  constructor(
    readonly name: string,
    readonly config: ToolServerConfig,
    private readonly ctx: ConnectionContext,
  ) {
    this.scrub = redactor(secretsOf(config));
    this.now = ctx.now ?? Date.now;
  }

  /**
   * The server's tools: the cached list while it is fresh, else listed (the server started
   * when it is not running). A server down within its backoff keeps offering its last list —
   * a call restarts it — and one never listed throws `ServerUnavailable`.
   */
  async tools(): Promise<ServerTool[]> {
    if (this.cached && (!this.stale || (!this.live && this.now() < this.retryAt))) return this.cached;
    const live = await this.ensure(AbortSignal.timeout(this.ctx.limits.startTimeoutMs), false);
    if (this.stale || !this.cached) await this.refresh(live);
    return this.cached ?? [];
  }

  /** Calls a tool; never throws but when `signal` aborts (then with its reason). */
  async call(tool: string, args: Record<string, unknown>, signal: AbortSignal): Promise<ToolOutcome> {
    const limitMs = this.ctx.limits.callTimeoutMs;
    const deadline = AbortSignal.any([signal, AbortSignal.timeout(limitMs)]);
    const label = `${this.name}.${tool}`;
    this.inflight++;
    try {
      // One retry, only when an HTTP server forgot the session: the call never reached the tool.
      for (let attempt = 1; ; attempt++) {
        let live: Live | undefined;
        try {
          live = await this.ensure(deadline, true);
          const result = await live.client.callTool({ name: tool, arguments: args }, undefined, {
            signal: deadline,
            timeout: limitMs,
          });
          return outcomeOf(result);
        } catch (error) {
          if (signal.aborted) throw signal.reason;
          if (deadline.aborted || isTimeout(error)) {
            return { status: 'error', text: `${label}: no answer within ${limitMs / 1000} s` };
          }
          if (error instanceof ServerUnavailable)
            return { status: 'error', text: `${label}: ${error.message}` };
          if (live && isConnectionFailure(error)) {
            await this.drop(live, describeFailure(error));
            if (attempt === 1 && isSessionGone(error)) continue;
            return {
              status: 'error',
              text: `${label}: server "${this.name}" failed during the call (${this.lastFailure}); it is started again on next use`,
            };
          }
          return { status: 'error', text: `${label}: ${this.scrub(describeFailure(error))}` };
        }
      }
    } finally {
      this.inflight--;
      if (this.retired && this.inflight === 0) void this.stop();
    }
  }

  /** What doctor shows: starts the server if needed and lists its tools, or says why it cannot. */
  async probe(): Promise<{ ok: true; tools: ServerTool[] } | { ok: false; reason: string }> {
    try {
      return { ok: true, tools: await this.tools() };
    } catch (error) {
      return { ok: false, reason: (error as Error).message };
    }
  }

  /** Replaced by a new config or removed from it: stopped once its calls in flight have ended. */
  retire(): void {
    this.retired = true;
    if (this.inflight === 0) void this.stop();
  }

  /** Stops the server now (a start under way too); calls in flight get an error result. */
  async stop(): Promise<void> {
    this.retired = true;
    const live = this.live ?? this.pending;
    this.live = undefined;
    if (!live) return;
    await endSession(live);
    await live.client.close().catch(() => {});
  }

  /** The running connection, starting one when there is none (after the backoff, when `wait`). */
  private async ensure(signal: AbortSignal, wait: boolean): Promise<Live> {
    for (;;) {
      if (this.retired) throw new ServerUnavailable(`server "${this.name}" is no longer configured`);
      if (this.live) return this.live;
      if (this.starting) return await untilAborted(this.starting, signal);
      const delay = this.retryAt - this.now();
      if (delay <= 0) {
        this.starting = this.start().finally(() => {
          this.starting = undefined;
        });
        continue;
      }
      if (!wait) {
        throw new ServerUnavailable(
          `server "${this.name}" is down (${this.lastFailure}); next start in ${Math.ceil(delay / 1000)} s`,
        );
      }
      await sleep(delay, undefined, { signal });
    }
  }

  private async start(): Promise<Live> {
    const { configDir, log, limits } = this.ctx;
    const opened = openTransport(this.name, this.config, configDir, log);
    const client = new Client(CLIENT_INFO, { capabilities: {} });
    const live: Live = { client, opened };
    client.onclose = () => this.lost(live);
    client.onerror = (error) =>
      log.debug(
        { server: this.name, error: this.scrub(describeFailure(error)) },
        'mcp server: transport error',
      );
    client.setNotificationHandler(ToolListChangedNotificationSchema, () => this.toolsChanged(live));
    const signal = AbortSignal.timeout(limits.startTimeoutMs);
    this.pending = live;
    try {
      await client.connect(opened.transport, { signal, timeout: limits.startTimeoutMs });
      this.cached = await listAll(client, signal, limits.startTimeoutMs, this.skipped);
      this.stale = false;
      if (this.retired) throw new ServerUnavailable(`server "${this.name}" is no longer configured`);
    } catch (error) {
      await client.close().catch(() => {});
      if (this.retired) throw new ServerUnavailable(`server "${this.name}" is no longer configured`);
      const reason = signal.aborted
        ? `did not start within ${limits.startTimeoutMs / 1000} s`
        : (opened.ended() ?? this.scrub(describeFailure(error)));
      this.pending = undefined;
      this.failed(reason);
      log.warn({ server: this.name, reason }, 'mcp server cannot start');
      throw new ServerUnavailable(`server "${this.name}" cannot start: ${reason}`);
    }
    this.pending = undefined;
    this.live = live;
    this.failures = 0;
    this.lastFailure = undefined;
    log.info(
      { server: this.name, transport: this.config.transport, tools: this.cached.length },
      'mcp server started',
    );
    return live;
  }

  /** The connection ended on its own (the process exited, or the client closed after a failure). */
  private lost(live: Live): void {
    if (this.live !== live) return;
    this.live = undefined;
    if (this.retired) return;
    this.failed(live.opened.ended() ?? 'the connection closed');
    this.ctx.log.warn(
      { server: this.name, reason: this.lastFailure, restartAfterMs: this.retryAt - this.now() },
      'mcp server stopped; it is started again when next needed',
    );
  }

  /** A call failed on the connection itself: close it, so the next use starts a new one. */
  private async drop(live: Live, reason: string): Promise<void> {
    if (this.live !== live) return;
    this.live = undefined;
    this.failed(live.opened.ended() ?? this.scrub(reason));
    await live.client.close().catch(() => {});
  }

  private readonly skipped = (tool: string) =>
    this.ctx.log.warn(
      { server: this.name, tool: tool.slice(0, 140) },
      'mcp server: a tool whose name is not 1-128 letters, digits, "_", "-", "." or "/" is not offered',
    );

  private failed(reason: string): void {
    this.failures++;
    this.lastFailure = reason;
    this.retryAt = this.now() + backoffDelay(this.failures, this.ctx.limits.backoff);
  }

  /** `notifications/tools/list_changed`: listed again now, so the next run sees the new list. */
  private toolsChanged(live: Live): void {
    this.stale = true;
    if (this.live !== live) return;
    void this.refresh(live).catch((error) =>
      this.ctx.log.warn(
        { server: this.name, error: this.scrub(describeFailure(error)) },
        'mcp server: listing its changed tools failed; they are listed again on next use',
      ),
    );
  }

  private async refresh(live: Live): Promise<void> {
    const { startTimeoutMs } = this.ctx.limits;
    this.stale = false;
    try {
      this.cached = await listAll(
        live.client,
        AbortSignal.timeout(startTimeoutMs),
        startTimeoutMs,
        this.skipped,
      );
    } catch (error) {
      this.stale = true;
      throw error;
    }
  }
}

/** Every page of `tools/list`, less the tools whose names no selector could name. */
async function listAll(
  client: Client,
  signal: AbortSignal,
  timeout: number,
  skipped: (name: string) => void,
): Promise<ServerTool[]> {
  const tools: ServerTool[] = [];
  let cursor: string | undefined;
  for (let page = 0; page < MAX_LIST_PAGES; page++) {
    const listed = await client.listTools(cursor === undefined ? {} : { cursor }, { signal, timeout });
    for (const tool of listed.tools) {
      if (!TOOL_NAME.test(tool.name)) {
        skipped(tool.name);
        continue;
      }
      tools.push({
        name: tool.name,
        description: tool.description ?? tool.title ?? '',
        inputSchema: tool.inputSchema as Record<string, unknown>,
      });
    }
    cursor = listed.nextCursor;
    if (cursor === undefined) break;
  }
  return tools;
}

/** How long a stop waits for an HTTP server to end the session (DELETE), which the spec asks of a client. */
const END_SESSION_MS = 2_000;

async function endSession(live: Live): Promise<void> {
  const transport = live.opened.transport;
  if (!(transport instanceof StreamableHTTPClientTransport) || transport.sessionId === undefined) return;
  await Promise.race([
    transport.terminateSession().catch(() => {}),
    new Promise((resolve) => setTimeout(resolve, END_SESSION_MS).unref()),
  ]);
}

function isTimeout(error: unknown): boolean {
  return error instanceof McpError && error.code === ErrorCode.RequestTimeout;
}

/** `promise`, or the signal's reason if it aborts first (the promise goes on for its other waiters). */
function untilAborted<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (error) => {
        signal.removeEventListener('abort', onAbort);
        reject(error);
      },
    );
  });
}
