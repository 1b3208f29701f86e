// The MCP server of bench/tool-step.mjs, over stdio on the SDK's own server side: one tool,
// `lookup {id}`, answering a short text at once, so the bench measures the gateway's side
// of a tool call and not a tool's work.
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { z } from 'zod';

const server = new McpServer({ name: 'agentgate-bench', version: '1.0.0' });
server.registerTool(
  'lookup',
  { description: 'Looks an item up', inputSchema: { id: z.number().int() } },
  async ({ id }) => ({
    content: [{ type: 'text', text: `item ${id}: open, 2 approvals, last change 3 h ago` }],
  }),
);
await server.connect(new StdioServerTransport());
