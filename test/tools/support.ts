/**
 * What the MCP tests share: the stdio fixture's config, a tool source over it, and a log
 * whose lines a test reads back.
 */
import { Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { createLogger } from '../../src/log.js';
import type { AgentToolsConfig, ToolServerConfig } from '../../src/tools/config.js';

export const STDIO_FIXTURE = fileURLToPath(new URL('../fixtures/mcp/stdio-server.mjs', import.meta.url));
export const FIXTURE_DIR = fileURLToPath(new URL('../fixtures/mcp/', import.meta.url));

export function stdioServer(env: Record<string, string> = {}, cwd?: string): ToolServerConfig {
  return { transport: 'stdio', command: [process.execPath, STDIO_FIXTURE], env, ...(cwd ? { cwd } : {}) };
}

export function agentTools(allow: string[], approval: string[] = [], maxSteps = 8): AgentToolsConfig {
  return { allow, approval, maxSteps };
}

/** A debug logger writing JSON lines a test can read back. */
export function capturedLog() {
  const lines: Record<string, unknown>[] = [];
  let text = '';
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      text += chunk.toString('utf8');
      for (const line of chunk.toString('utf8').split('\n')) if (line.trim()) lines.push(JSON.parse(line));
      done();
    },
  });
  return { log: createLogger('debug', stream), lines, text: () => text };
}

/** Limits far shorter than the product's, so a test waits for none of them. */
export const QUICK_LIMITS = {
  callTimeoutMs: 20_000,
  startTimeoutMs: 15_000,
  backoff: { initial: 50, max: 200 },
};
