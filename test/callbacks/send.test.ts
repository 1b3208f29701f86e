/**
 * One callback attempt against loopback receivers (docs/callers.md, "Retries"
 * and "SSRF rules"): what each kind of answer, or its absence, becomes; a
 * refused target makes no connection; a redirect is the answer, not followed;
 * the time limit; the answer's body read only up to ANSWER_BODY_BYTES; and a
 * connection of each attempt's own, closed after it.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { ANSWER_BODY_BYTES, type Resolver, sendCallback } from '../../src/callbacks/send.js';
import { type FakeServer, readBody, startServer } from '../fakes/support.js';

let servers: FakeServer[] = [];
afterEach(async () => {
  for (const server of servers) await server.close();
  servers = [];
});

interface Seen {
  path: string;
  headers: IncomingMessage['headers'];
  raw: string;
  remotePort: number | undefined;
}

async function receiver(answer: (res: ServerResponse, req: IncomingMessage) => void) {
  const seen: Seen[] = [];
  const server = await startServer(async (req, res) => {
    const body = await readBody(req);
    seen.push({
      path: req.url ?? '',
      headers: req.headers,
      raw: body.raw,
      remotePort: req.socket.remotePort,
    });
    answer(res, req);
  });
  servers.push(server);
  return { url: server.url, port: Number(new URL(server.url).port), seen };
}

const attempt = (url: string, extra: Partial<Parameters<typeof sendCallback>[0]> = {}) =>
  sendCallback({
    url,
    headers: { 'content-type': 'application/json', 'webhook-id': 'msg_1' },
    body: '{"type":"run.finished"}',
    timeoutMs: 2000,
    self: [{ host: '127.0.0.1', port: 1 }],
    ...extra,
  });

describe('sendCallback', () => {
  it('POSTs the body and headers as given, on a connection of its own, and returns the status', async () => {
    const r = await receiver((res) => res.writeHead(204).end());
    expect(await attempt(`${r.url}/cb?build=42`)).toEqual({ kind: 'answer', status: 204 });
    expect(await attempt(`${r.url}/cb`)).toEqual({ kind: 'answer', status: 204 });
    const [first, second] = r.seen;
    expect(first).toMatchObject({ path: '/cb?build=42', raw: '{"type":"run.finished"}' });
    expect(first?.headers).toMatchObject({
      'content-type': 'application/json',
      'webhook-id': 'msg_1',
      'content-length': '23',
      connection: 'close',
    });
    expect(second?.remotePort).not.toBe(first?.remotePort);
  });

  it('reads Retry-After, and takes a redirect as the answer without following it', async () => {
    const elsewhere = await receiver((res) => res.writeHead(200).end());
    const r = await receiver((res, req) => {
      if (req.url === '/busy') res.writeHead(429, { 'retry-after': '7' }).end('slow down');
      else res.writeHead(307, { location: `${elsewhere.url}/x` }).end('moved');
    });
    expect(await attempt(`${r.url}/busy`)).toEqual({ kind: 'answer', status: 429, retryAfterMs: 7000 });
    expect(await attempt(`${r.url}/moved`)).toEqual({ kind: 'answer', status: 307 });
    expect(elsewhere.seen).toHaveLength(0);
  });

  it('refuses a forbidden IP literal, or a name with any forbidden address, without connecting', async () => {
    const r = await receiver((res) => res.writeHead(204).end());
    const self = [{ host: '127.0.0.1', port: r.port }];
    expect(await attempt(`${r.url}/cb`, { self })).toEqual({
      kind: 'refused',
      reason: `127.0.0.1:${r.port} is the gateway's own listener`,
    });
    expect(await attempt('http://169.254.169.254/latest/meta-data/')).toEqual({
      kind: 'refused',
      reason: '169.254.169.254 is a link-local or cloud metadata address',
    });
    const mixed: Resolver = (_hostname, callback) =>
      callback(null, [
        { address: '127.0.0.1', family: 4 },
        { address: '169.254.169.254', family: 4 },
      ]);
    expect(await attempt(`http://mixed.test:${r.port}/cb`, { resolve: mixed })).toEqual({
      kind: 'refused',
      reason: 'mixed.test resolves to 169.254.169.254 is a link-local or cloud metadata address',
    });
    expect(r.seen).toHaveLength(0);
  });

  it('connects to the address the resolver gave for an allowed name', async () => {
    const r = await receiver((res) => res.writeHead(200).end('ok'));
    const names: string[] = [];
    const local: Resolver = (hostname, callback) => {
      names.push(hostname);
      callback(null, [{ address: '127.0.0.1', family: 4 }]);
    };
    expect(await attempt(`http://hooks.example.test:${r.port}/cb`, { resolve: local })).toEqual({
      kind: 'answer',
      status: 200,
    });
    expect(names).toEqual(['hooks.example.test']);
    expect(r.seen[0]?.headers.host).toBe(`hooks.example.test:${r.port}`);
  });

  it('a name that does not resolve, a refused connection and a receiver that never answers are network failures', async () => {
    const none: Resolver = (_hostname, callback) =>
      callback(Object.assign(new Error('nx'), { code: 'ENOTFOUND' }), []);
    expect(await attempt('http://nowhere.test/cb', { resolve: none })).toEqual({
      kind: 'network',
      reason: 'request failed (ENOTFOUND)',
    });
    const closed = await startServer(() => {});
    await closed.close();
    expect(await attempt(`${closed.url}/cb`)).toEqual({
      kind: 'network',
      reason: 'request failed (ECONNREFUSED)',
    });
    const silent = await receiver(() => {});
    expect(await attempt(`${silent.url}/cb`, { timeoutMs: 200 })).toEqual({
      kind: 'network',
      reason: 'no answer within 0.2 s',
    });
  });

  it('the status stands when the body stalls past the time limit or breaks off', async () => {
    const r = await receiver((res, req) => {
      if (req.url === '/stall') res.writeHead(202);
      else res.writeHead(503, { 'retry-after': '3' });
      res.write('partial');
      if (req.url !== '/stall') setTimeout(() => res.socket?.destroy(), 50);
    });
    expect(await attempt(`${r.url}/stall`, { timeoutMs: 300 })).toEqual({ kind: 'answer', status: 202 });
    expect(await attempt(`${r.url}/broken`)).toEqual({ kind: 'answer', status: 503, retryAfterMs: 3000 });
  });

  it('reads no more of an endless answer than ANSWER_BODY_BYTES, then closes the connection', async () => {
    let written = 0;
    let closed = false;
    const r = await receiver((res) => {
      res.writeHead(200, { 'content-type': 'text/plain' });
      const chunk = Buffer.alloc(16 * 1024, 'a');
      const pump = () => {
        while (!closed) {
          written += chunk.length;
          if (!res.write(chunk)) return res.once('drain', pump);
        }
      };
      res.on('close', () => {
        closed = true;
      });
      pump();
    });
    expect(await attempt(`${r.url}/cb`, { timeoutMs: 5000 })).toEqual({ kind: 'answer', status: 200 });
    await expect.poll(() => closed, { timeout: 2000 }).toBe(true);
    // Written before the close: the cap plus what the sockets' buffers took (megabytes on loopback).
    expect(written).toBeGreaterThanOrEqual(ANSWER_BODY_BYTES);
    expect(written).toBeLessThan(64 * 1024 * 1024);
  });

  it('an attempt cut by the gateway stopping is not an answer', async () => {
    const r = await receiver(() => {});
    const controller = new AbortController();
    const pending = attempt(`${r.url}/cb`, { signal: controller.signal });
    setTimeout(() => controller.abort(new Error('stopping')), 50);
    expect(await pending).toEqual({ kind: 'network', reason: 'the gateway is stopping' });
  });
});
