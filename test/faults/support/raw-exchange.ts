/**
 * One raw HTTP/1.1 exchange for the fuzz: any bytes written on a fresh
 * connection from a chosen loopback address, and every response the server
 * sent before it closed (or went quiet) parsed out of what came back.
 */
import { connect } from 'node:net';

export interface ParsedResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
}

export interface Exchange {
  responses: ParsedResponse[];
  /** Bytes left over that were not a complete response. */
  rest: string;
  closedByServer: boolean;
  error?: string;
}

/**
 * Parses consecutive Content-Length framed responses (a response without the
 * header has an empty body, as Node's bare parser-error answers do). The first
 * response to a HEAD has no body whatever its Content-Length says.
 */
export function parseResponses(
  data: Buffer,
  firstIsHead: boolean,
): { responses: ParsedResponse[]; rest: Buffer } {
  const responses: ParsedResponse[] = [];
  let rest = data;
  for (;;) {
    const end = rest.indexOf('\r\n\r\n');
    if (end < 0) break;
    const lines = rest.subarray(0, end).toString('latin1').split('\r\n');
    const status = Number((lines[0] ?? '').split(' ')[1]);
    const headers: Record<string, string> = {};
    for (const line of lines.slice(1)) {
      const colon = line.indexOf(':');
      if (colon > 0) headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
    }
    const noBody =
      (firstIsHead && responses.length === 0) || status === 204 || status === 304 || status < 200;
    const length = noBody ? 0 : Number(headers['content-length'] ?? '0');
    const after = rest.subarray(end + 4);
    if (after.length < length) break;
    responses.push({ status, headers, body: after.subarray(0, length).toString('utf8') });
    rest = after.subarray(length);
  }
  return { responses, rest };
}

export interface ExchangeOptions {
  host: string;
  port: number;
  localAddress: string;
  /** Give up waiting for a first response after this long. */
  answerTimeoutMs: number;
  /** After a response, wait this long for more (pipelined) responses or the close. */
  settleMs: number;
  isHead: boolean;
}

export function exchange(bytes: Buffer, options: ExchangeOptions): Promise<Exchange> {
  return new Promise((resolve) => {
    let data = Buffer.alloc(0);
    let closedByServer = false;
    let error: string | undefined;
    let timer: NodeJS.Timeout | undefined;
    const socket = connect({ host: options.host, port: options.port, localAddress: options.localAddress });
    const finish = () => {
      clearTimeout(timer);
      socket.destroy();
      const { responses, rest } = parseResponses(data, options.isHead);
      resolve({ responses, rest: rest.toString('latin1').slice(0, 200), closedByServer, error });
    };
    const arm = (ms: number) => {
      clearTimeout(timer);
      timer = setTimeout(finish, ms);
    };
    socket.on('connect', () => socket.write(bytes));
    socket.on('data', (chunk: Buffer) => {
      data = Buffer.concat([data, chunk]);
      if (parseResponses(data, options.isHead).responses.length > 0) arm(options.settleMs);
    });
    socket.on('error', (e) => {
      error = e.message;
    });
    socket.on('close', () => {
      closedByServer = error === undefined;
      finish();
    });
    arm(options.answerTimeoutMs);
  });
}
