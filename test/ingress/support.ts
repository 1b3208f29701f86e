/**
 * Shared helpers for the ingress tests: the gateway's JSON error shape (docs/endpoints.md), plain requests with full control over method/headers/body,
 * requests from a chosen local address, and a raw-socket HTTP/1.1 client for
 * body-limit and deadline tests.
 */
import { request as httpRequest, type OutgoingHttpHeaders } from 'node:http';
import { connect, type Socket } from 'node:net';
import { expect } from 'vitest';
import { type Answer, HOOK_TOKEN, type TestGateway, type TestRequest } from '../helpers/gateway.js';

export const MAIN_SESSION = 'agent:main:main';
export const BEARER = { authorization: `Bearer ${HOOK_TOKEN}` };

/** Asserts the gateway's error shape `{"ok":false,"error":"<sentence>","code":"<code>"}` (+ `field`). */
export function expectError(answer: Answer, status: number, code: string): void {
  expect({ status: answer.status, code: answer.body?.code }, answer.text).toEqual({ status, code });
  expect(answer.headers.get('content-type') ?? '').toMatch(/^application\/json/);
  expect(answer.body.ok).toBe(false);
  expect(typeof answer.body.error).toBe('string');
  expect(answer.body.error.length).toBeGreaterThan(0);
  const extra = Object.keys(answer.body).filter((key) => !['ok', 'error', 'code', 'field'].includes(key));
  expect(extra).toEqual([]);
}

/** Asserts a 400 `invalid_payload` that names `field` in both `error` and `field`. */
export function expectInvalidPayload(answer: Answer, field: string): void {
  expectError(answer, 400, 'invalid_payload');
  expect(answer.body.field).toBe(field);
  expect(answer.body.error).toContain(field);
}

export type SendOptions = TestRequest;

/**
 * A request to any path of the gateway; no token is added unless `headers` carries one.
 * Over real HTTP, or through `inject()` on a gateway started with `inject`.
 */
export function send(gw: TestGateway, path: string, options: SendOptions = {}): Promise<Answer> {
  return gw.request(path, { ...options, method: options.method ?? 'POST' });
}

/** POST to a hook with an explicit header set (no token unless given). */
export function postHook(
  gw: TestGateway,
  name: string,
  body: unknown,
  headers: Record<string, string> = {},
): Promise<Answer> {
  return send(gw, `/hooks/${name}`, {
    headers: { 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
}

export async function listEvents(gw: TestGateway, sessionKey = MAIN_SESSION, query = '') {
  const answer = await gw.admin(`/api/sessions/${encodeURIComponent(sessionKey)}/events${query}`);
  expect(answer.status, answer.text).toBe(200);
  return answer.body.events as { id: string; ts: string; text: string; source: string; status: string }[];
}

export async function getRun(gw: TestGateway, runId: string) {
  const answer = await gw.admin(`/api/runs/${encodeURIComponent(runId)}`);
  expect(answer.status, answer.text).toBe(200);
  return answer.body;
}

/**
 * A request through node:http from a chosen local address (127.0.0.0/8 is all
 * loopback on Linux), so a test can be a second client address without a proxy.
 */
export function requestFrom(
  gw: TestGateway,
  localAddress: string,
  path: string,
  options: { method?: string; headers?: OutgoingHttpHeaders; body?: string } = {},
): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: Json }> {
  const url = new URL(path, gw.url);
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      {
        host: url.hostname,
        port: url.port,
        path: url.pathname + url.search,
        method: options.method ?? 'POST',
        headers: options.headers,
        localAddress,
        agent: false,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          resolve({
            status: res.statusCode ?? 0,
            headers: res.headers,
            body: text ? JSON.parse(text) : undefined,
          });
        });
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(options.body);
  });
}

// biome-ignore lint/suspicious/noExplicitAny: parsed JSON answers are inspected freely in tests
export type Json = any;

export interface RawResponse {
  statusLine: string;
  status: number;
  headers: Record<string, string>;
  body: string;
  json: Json;
}

/** Parses one HTTP/1.1 response (Content-Length framed) out of `data`, or returns undefined if incomplete. */
export function parseResponse(data: Buffer): RawResponse | undefined {
  const end = data.indexOf('\r\n\r\n');
  if (end < 0) return undefined;
  const head = data.subarray(0, end).toString('latin1').split('\r\n');
  const statusLine = head[0] ?? '';
  const headers: Record<string, string> = {};
  for (const line of head.slice(1)) {
    const colon = line.indexOf(':');
    headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  const length = Number(headers['content-length'] ?? '0');
  const bodyBytes = data.subarray(end + 4);
  if (bodyBytes.length < length) return undefined;
  const body = bodyBytes.subarray(0, length).toString('utf8');
  let json: unknown;
  try {
    json = body ? JSON.parse(body) : undefined;
  } catch {
    json = undefined;
  }
  return { statusLine, status: Number(statusLine.split(' ')[1]), headers, body, json };
}

/** Every complete response in `data`, in order: the answers to pipelined requests on one connection. */
export function parseResponses(data: Buffer): RawResponse[] {
  const responses: RawResponse[] = [];
  let rest = data;
  for (let parsed = parseResponse(rest); parsed; parsed = parseResponse(rest)) {
    responses.push(parsed);
    const headEnd = rest.indexOf('\r\n\r\n') + 4;
    rest = rest.subarray(headEnd + Number(parsed.headers['content-length'] ?? '0'));
  }
  return responses;
}

/** A raw HTTP/1.1 connection: write what you like, and wait for the server's responses. */
export class RawClient {
  readonly socket: Socket;
  private data = Buffer.alloc(0);
  private waiters: (() => void)[] = [];
  /** Set when the connection failed (e.g. a reset); `response()` still reports what arrived before. */
  error: Error | undefined;
  closed = false;
  /** The server half-closed (FIN): it will send nothing more. */
  ended = false;

  private constructor(socket: Socket) {
    this.socket = socket;
    socket.on('data', (chunk: Buffer) => {
      this.data = Buffer.concat([this.data, chunk]);
      this.notify();
    });
    socket.on('error', (error) => {
      this.error = error;
      this.notify();
    });
    socket.on('end', () => {
      this.ended = true;
      this.notify();
    });
    socket.on('close', () => {
      this.closed = true;
      this.notify();
    });
  }

  static open(gw: TestGateway): Promise<RawClient> {
    const { hostname, port } = new URL(gw.url);
    return new Promise((resolve, reject) => {
      // allowHalfOpen: like a plain blocking client, keep sending after the server's FIN.
      const socket = connect({ host: hostname, port: Number(port), allowHalfOpen: true }, () => {
        socket.off('error', reject);
        resolve(new RawClient(socket));
      });
      socket.once('error', reject);
    });
  }

  /** The request line and headers of a POST to `path` with the hook token. */
  static head(path: string, headers: Record<string, string | number>): string {
    const lines = [`POST ${path} HTTP/1.1`, 'Host: 127.0.0.1', `Authorization: Bearer ${HOOK_TOKEN}`];
    for (const [name, value] of Object.entries(headers)) lines.push(`${name}: ${value}`);
    return `${lines.join('\r\n')}\r\n\r\n`;
  }

  get received(): Buffer {
    return this.data;
  }

  /** Whatever has been parsed so far, without waiting. */
  peek(): RawResponse | undefined {
    return parseResponse(this.data);
  }

  /** Writes and waits for the kernel to take it (resolves false if the connection is gone). */
  write(chunk: string | Buffer): Promise<boolean> {
    if (this.socket.destroyed || this.error) return Promise.resolve(false);
    return new Promise((resolve) => {
      this.socket.write(chunk, (error) => resolve(!error));
    });
  }

  /** Resolves with the first complete response; rejects after `timeoutMs` or when the socket closes without one. */
  async response(timeoutMs = 10_000): Promise<RawResponse> {
    return (await this.responses(1, timeoutMs))[0] as RawResponse;
  }

  /**
   * Resolves with the first `count` complete responses; rejects after `timeoutMs`
   * or when the server ends the connection before sending that many.
   */
  responses(count: number, timeoutMs = 10_000): Promise<RawResponse[]> {
    return this.until<RawResponse[]>(timeoutMs, `${count} complete response(s)`, () => {
      const parsed = parseResponses(this.data);
      if (parsed.length >= count) return { value: parsed.slice(0, count) };
      if (this.closed || this.ended) {
        return {
          failure: `connection ended with ${parsed.length} of ${count} response(s) (${this.error?.message ?? 'no error'})`,
        };
      }
      return undefined;
    });
  }

  /** Resolves once the server has ended the connection (FIN or close); rejects after `timeoutMs`. */
  serverEnd(timeoutMs = 10_000): Promise<void> {
    return this.until<void>(timeoutMs, 'the server ending the connection', () =>
      this.ended || this.closed ? { value: undefined } : undefined,
    );
  }

  /** Re-evaluates `state` on every socket event until it settles, or fails after `timeoutMs`. */
  private until<T>(
    timeoutMs: number,
    what: string,
    state: () => { value: T } | { failure: string } | undefined,
  ): Promise<T> {
    return new Promise((resolve, reject) => {
      const got = () => this.data.toString('latin1');
      const timer = setTimeout(
        () => reject(new Error(`no ${what} within ${timeoutMs} ms; got: ${got()}`)),
        timeoutMs,
      );
      const check = () => {
        const settled = state();
        if (!settled) return false;
        clearTimeout(timer);
        if ('failure' in settled) reject(new Error(`${settled.failure}; got: ${got()}`));
        else resolve(settled.value);
        return true;
      };
      if (check()) return;
      const waiter = () => {
        if (!check()) this.waiters.push(waiter);
      };
      this.waiters.push(waiter);
    });
  }

  close(): void {
    this.socket.destroy();
  }

  private notify(): void {
    const waiters = this.waiters;
    this.waiters = [];
    for (const waiter of waiters) waiter();
  }
}
