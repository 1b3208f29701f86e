/**
 * Answers for requests that never reach a route — what Node's HTTP parser
 * refuses (the server's 'clientError') and what the router refuses (a path
 * that is not valid percent-encoding, a path parameter over the length limit)
 * — in the gateway's JSON error shape instead of Node's or Fastify's own
 * bodies (docs/errors.md).
 *
 * A parse error can arrive while an earlier request on the same keep-alive
 * connection is still being handled: a complete POST followed, in the same
 * write, by bytes that are not HTTP (or by more body than its Content-Length
 * announced, which parse as a broken next request). That request may already
 * be committed, so its own answer must reach the client first: the error
 * answer waits until the responses in flight on the connection are sent, then
 * goes out and the connection closes. Nothing here runs for a well-formed
 * request.
 */
import { type IncomingMessage, maxHeaderSize, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyBaseLogger } from 'fastify';
import { writeClosingAnswer } from '../http/closing-answer.js';
import { HttpError } from '../http/errors.js';
import { uriTooLong } from '../http/path-length.js';

/** Node's parser error: an llhttp `HPE_*` code (with llhttp's fixed `reason`) or a Node timeout code. */
export interface ParserError extends Error {
  code?: string;
  reason?: string;
}

/** The answer to a request Node's HTTP parser refused. */
export function parserErrorAnswer(error: ParserError): HttpError {
  switch (error.code) {
    case 'HPE_HEADER_OVERFLOW':
      // The request line counts toward this limit too, so an over-long URL lands here.
      return new HttpError('headers_too_large', `the request line and headers exceed ${maxHeaderSize} bytes`);
    case 'HPE_CHUNK_EXTENSIONS_OVERFLOW':
      return new HttpError('payload_too_large', 'the chunk extensions of the request body are too large');
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return new HttpError('request_timeout', 'the request was not received in time');
    default: {
      // llhttp's reason is a fixed phrase ("Invalid method encountered"), never request bytes.
      const reason = typeof error.reason === 'string' ? `: ${error.reason}` : '';
      return new HttpError('bad_request', `malformed HTTP request${reason}`);
    }
  }
}

/** Sockets whose parse error is already being answered (the parser reports every later chunk again). */
const answering = new WeakSet<Socket>();

/** Fastify's `clientErrorHandler`: answers a parse error once the connection's earlier answers are out. */
export function onClientError(this: { log: FastifyBaseLogger }, error: ParserError, socket: Socket): void {
  // A reset or a socket already gone: there is nobody to answer.
  if (error.code === 'ECONNRESET' || socket.destroyed || answering.has(socket)) return;
  answering.add(socket);
  this.log.debug({ code: error.code }, 'client error: malformed HTTP request');
  const answer = parserErrorAnswer(error);
  afterResponsesInFlight(socket, () => writeClosingAnswer(socket, answer));
}

/**
 * Calls `then` once no complete request on `socket` is waiting for its
 * response. A response whose request is incomplete is not waited for: its body
 * can no longer arrive through the failed parser, so nothing of it was
 * committed, and the error answer is all that request gets.
 */
function afterResponsesInFlight(socket: Socket, then: () => void): void {
  const response = responseInFlight(socket);
  if (!response?.req.complete || socket.destroyed) {
    then();
    return;
  }
  // 'close' follows 'finish' by a tick, after Node has moved a queued pipelined
  // response onto the socket: looking again then waits for that one too.
  response.once('close', () => afterResponsesInFlight(socket, then));
}

/**
 * The response Node is currently writing on `socket`, if any. Node keeps it in
 * `socket._httpMessage` (its own clientError fallback consults the same field)
 * and offers no public accessor; were the field ever gone, the error would be
 * answered at once, as before. test/ingress/http-parser-errors.test.ts proves
 * the wait on the Node version in use.
 */
function responseInFlight(socket: Socket): ServerResponse | undefined {
  return (socket as Socket & { _httpMessage?: ServerResponse | null })._httpMessage ?? undefined;
}

/**
 * The server's 'connect' listener. Node hands a CONNECT request to that event
 * instead of to the router, and with no listener it drops the connection
 * without a word. This gateway is no proxy: CONNECT is refused like any other
 * method a path does not take, and the connection closes (after a CONNECT the
 * client may already be sending tunnel bytes, which are no HTTP).
 */
export function onConnect(_request: IncomingMessage, socket: Socket): void {
  writeClosingAnswer(
    socket,
    new HttpError('method_not_allowed', 'CONNECT is not allowed: this server is not a proxy', {
      allow: 'POST',
    }),
  );
}

/** The router's answer to a path that is not valid percent-encoding (e.g. `/api/runs/%`). */
export function onBadUrl(_path: string, _request: unknown, response: ServerResponse): void {
  sendJson(response, new HttpError('invalid_url', 'the request path is not valid percent-encoding'));
}

/** The router's answer to a path parameter longer than `MAX_PARAM_LENGTH` (http/path-length.ts). */
export function onMaxParamLength(_path: string, _request: unknown, response: ServerResponse): void {
  sendJson(response, uriTooLong());
}

function sendJson(response: ServerResponse, error: HttpError): void {
  const body = JSON.stringify(error.toJSON());
  response.writeHead(error.statusCode, {
    ...error.headers,
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(body),
  });
  response.end(body);
}
