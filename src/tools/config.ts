/**
 * The configuration of tools (docs/tools.md): the MCP servers a gateway may start or reach,
 * an agent's allow-list and approval rules, and a mapping's narrowing.
 */
import { z } from 'zod';

const nonEmpty = z.string().min(1, 'must not be empty');
const DURATION = /^(0|\d+(\.\d+)?(ms|s|m|h|d))$/;

/** A server's name: the `<server>` of `<server>.<tool>`, so it cannot hold a dot. */
export const SERVER_NAME = /^[A-Za-z0-9_-]{1,64}$/;

/**
 * A tool selector: `<server>.<tool>` with `*` standing for any run of characters
 * (`repo.*`, `*.search`, `tickets.create_*`).
 */
export const TOOL_SELECTOR = /^[A-Za-z0-9_*-]{1,64}\.[A-Za-z0-9_.*/-]{1,128}$/;
const selector = z
  .string()
  .regex(TOOL_SELECTOR, 'must be "<server>.<tool>", with * as a wildcard (e.g. "repo.*")');

const stdioServerSchema = z.strictObject({
  transport: z.literal('stdio'),
  /** The program and its arguments; never run through a shell. */
  command: z.array(nonEmpty).min(1, 'must name the program to start'),
  /** The server's whole environment: nothing of the gateway's own is passed on. */
  env: z.record(z.string(), z.string()).default({}),
  /** Working directory; the config file's directory when absent. */
  cwd: nonEmpty.optional(),
});

const httpServerSchema = z.strictObject({
  transport: z.literal('http'),
  /** The Streamable HTTP endpoint, e.g. `https://tickets.internal/mcp`. */
  url: z.url({ error: 'must be an http(s) URL' }),
  headers: z.record(z.string(), z.string()).default({}),
});

export const toolServerSchema = z.discriminatedUnion('transport', [stdioServerSchema, httpServerSchema]);
export type ToolServerConfig = z.infer<typeof toolServerSchema>;

export const TOOLS_DEFAULTS = { approvalTimeout: '1h' } as const;

/** `tools`: the servers, by name, and how long a call waits for an operator's decision. */
export const toolsSchema = z.strictObject({
  servers: z
    .record(z.string().regex(SERVER_NAME, 'must be 1-64 letters, digits, "-" or "_"'), toolServerSchema)
    .default({}),
  approvalTimeout: z
    .string()
    .regex(DURATION, 'must be a duration like "30m", "1h" or "45s"')
    .default(TOOLS_DEFAULTS.approvalTimeout),
});
export type ToolsConfig = z.infer<typeof toolsSchema>;

/** The model calls of one run's loop, by default (docs/tools.md, "The loop"). */
export const DEFAULT_MAX_STEPS = 8;

/** An agent's `tools`: which tools its runs may call, which wait for approval, how many steps. */
export const agentToolsSchema = z.strictObject({
  allow: z.array(selector).default([]),
  approval: z.array(selector).default([]),
  maxSteps: z
    .number({ error: 'must be a whole number of model calls' })
    .int('must be a whole number of model calls')
    .min(1, 'must be at least 1')
    .max(100, 'must be at most 100')
    .default(DEFAULT_MAX_STEPS),
});
export type AgentToolsConfig = z.infer<typeof agentToolsSchema>;

/** A mapping's `tools`: narrows the agent's allow-list for this mapping's runs, never widens it. */
export const mappingToolsSchema = z.array(selector);
