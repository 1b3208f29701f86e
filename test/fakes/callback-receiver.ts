/**
 * A completion-callback receiver on loopback: records every request (headers
 * and raw body, as signed) and answers from a script — each `answerNext(...)`
 * answer is used once, in order, then 204 — so tests can make it fail with
 * 503, 429 + Retry-After, a 4xx or a redirect.
 */
import type { IncomingHttpHeaders } from 'node:http';
import { readBody, startServer } from './support.js';

export interface ReceivedCallback {
  path: string;
  headers: IncomingHttpHeaders;
  raw: string;
  // biome-ignore lint/suspicious/noExplicitAny: the body is JSON whose fields each test asserts itself
  json: any;
  at: number;
}

export interface ScriptedAnswer {
  status: number;
  headers?: Record<string, string>;
}

export interface CallbackReceiver {
  url: string;
  port: number;
  received: ReceivedCallback[];
  answerNext(...answers: ScriptedAnswer[]): void;
  close(): Promise<void>;
}

export async function startCallbackReceiver(): Promise<CallbackReceiver> {
  const received: ReceivedCallback[] = [];
  const script: ScriptedAnswer[] = [];
  const server = await startServer(async (req, res) => {
    const body = await readBody(req);
    received.push({
      path: req.url ?? '',
      headers: req.headers,
      raw: body.raw,
      json: body.json,
      at: Date.now(),
    });
    const answer = script.shift() ?? { status: 204 };
    res.writeHead(answer.status, { 'content-type': 'text/plain', ...answer.headers });
    res.end(answer.status < 300 ? '' : `answer ${answer.status}`);
  });
  return {
    url: server.url,
    port: Number(new URL(server.url).port),
    received,
    answerNext: (...answers) => script.push(...answers),
    close: () => server.close(),
  };
}
