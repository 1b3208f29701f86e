/**
 * A loopback MCP server over Streamable HTTP, on the SDK's own server side
 * (`StreamableHTTPServerTransport`, stateful: one session and one McpServer per
 * `initialize`), with the tools of test/fixtures/mcp/tools.mjs.
 *
 *     const mcp = await startFakeMcpHttp();
 *     // config: tools.servers.tickets = { transport: "http", url: mcp.url, headers: { Authorization: "Bearer t" } }
 *     expect(mcp.requests[0].headers.authorization).toBe('Bearer t');
 *     mcp.forgetSessions();   // as a restarted server: known session ids answer 404
 *     await mcp.close();
 *
 * `crash` behaves as the server process dying mid-call: every session is forgotten and
 * the call's connection is dropped without an answer. `jsonrpc_error` is answered with a
 * JSON-RPC error. `requests` records every request: method, JSON-RPC method, headers.
 */
import { randomUUID } from 'node:crypto';
import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { createFixtureServer } from '../fixtures/mcp/tools.mjs';
import { dropConnection, readBody, startServer } from './support.js';

export interface FakeMcpRequest {
  method: string;
  /** The JSON-RPC method of a POST (`initialize`, `tools/call`, …). */
  rpc?: string;
  /** For `tools/call`: the tool's name. */
  tool?: string;
  headers: IncomingHttpHeaders;
}

export interface FakeMcpHttp {
  /** The MCP endpoint, `http://127.0.0.1:<port>/mcp`. */
  url: string;
  requests: FakeMcpRequest[];
  /** Sessions begun (each `initialize` begins one). */
  sessionsStarted(): number;
  forgetSessions(): Promise<void>;
  close(): Promise<void>;
}

export async function startFakeMcpHttp(): Promise<FakeMcpHttp> {
  const sessions = new Map<string, StreamableHTTPServerTransport>();
  const requests: FakeMcpRequest[] = [];
  let started = 0;
  const forgetSessions = async () => {
    const all = [...sessions.values()];
    sessions.clear();
    await Promise.all(all.map((transport) => transport.close().catch(() => {})));
  };

  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    if (!req.url?.startsWith('/mcp')) {
      res.writeHead(404).end();
      return;
    }
    const body = req.method === 'POST' ? (await readBody(req)).json : undefined;
    const message = (body ?? {}) as { method?: string; params?: { name?: string } };
    requests.push({
      method: req.method ?? '',
      rpc: message.method,
      tool: message.params?.name,
      headers: req.headers,
    });
    if (message.method === 'tools/call' && message.params?.name === 'crash') {
      await forgetSessions();
      dropConnection(req);
      return;
    }
    const sessionId = req.headers['mcp-session-id'];
    let transport = typeof sessionId === 'string' ? sessions.get(sessionId) : undefined;
    if (!transport && message.method === 'initialize') {
      transport = await newSession(sessions);
      started++;
    }
    if (!transport) {
      // What the spec asks of a server for a session it does not know.
      res.writeHead(typeof sessionId === 'string' ? 404 : 400, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({ jsonrpc: '2.0', error: { code: -32001, message: 'Session not found' }, id: null }),
      );
      return;
    }
    await transport.handleRequest(req, res, body);
  };

  const server = await startServer((req, res) => {
    handle(req, res).catch(() => {
      if (!res.headersSent) res.writeHead(500).end();
    });
  });
  return {
    url: `${server.url}/mcp`,
    requests,
    sessionsStarted: () => started,
    forgetSessions,
    close: async () => {
      await forgetSessions();
      await server.close();
    },
  };
}

async function newSession(
  sessions: Map<string, StreamableHTTPServerTransport>,
): Promise<StreamableHTTPServerTransport> {
  const transport = new StreamableHTTPServerTransport({
    sessionIdGenerator: randomUUID,
    onsessioninitialized: (id) => {
      sessions.set(id, transport);
    },
  });
  // The `crash` tool is answered before it reaches here (see handle).
  await createFixtureServer({ onCrash: () => {} }).connect(transport);
  return transport;
}
